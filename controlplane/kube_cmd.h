/*
 * kube_cmd: `coxswain kube-watch`, one informer on its own, printing every
 * change as a JSON line. For operators (what does coxswain see?) and for
 * the informer's integration tests and benchmark, which drive it through
 * stdin ("dump" prints the cache, "quit" or EOF exits).
 */
#ifndef KUBE_CMD_H
#define KUBE_CMD_H

int kube_cmd_watch(int argc, char **argv);

#endif
