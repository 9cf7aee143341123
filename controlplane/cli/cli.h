/*
 * cli: the `coxswain` command line. Each subcommand is a function that gets
 * argv starting at the subcommand's name and returns the process exit code
 * (0 success, 1 a runtime failure, 2 a usage error: bad flags or arguments).
 * main.c holds the table; each subcommand lives in its own cmd_*.c.
 * Main thread only.
 */
#ifndef CLI_H
#define CLI_H

/* `coxswain kube-watch` (cmd_kube_watch.c): one informer on its own, printing
 * every change as a JSON line. For operators (what does coxswain see?) and for
 * the informer's integration tests and benchmark, which drive it through
 * stdin ("dump" prints the cache, "quit" or EOF exits). */
int cmd_kube_watch(int argc, char **argv);

/* `coxswain translate` (cmd_translate.c): manifests to xDS offline. */
int cmd_translate(int argc, char **argv);

/* `coxswain elect` (cmd_elect.c): only the leader election. */
int cmd_elect(int argc, char **argv);

/* `coxswain handover` (cmd_handover.c): asks the leader to hand the lock
 * over (--to IDENTITY or --any) and waits for the new leader. */
int cmd_handover(int argc, char **argv);

/* `coxswain run` (cmd_run.c): one replica of the control plane. */
int cmd_run(int argc, char **argv);

#endif
