/*
 * coxswain: the daemon and its subcommands.
 *
 * Each subcommand is a function `int cmd(int argc, char **argv)` that gets
 * argv starting at the subcommand's name and returns the process exit code.
 */
#include "cli.h"
#include "cx_version.h"

#include <stdio.h>
#include <string.h>

struct subcommand {
    const char *name;
    const char *summary;
    int (*fn)(int argc, char **argv);
};

static int cmd_version(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    printf("coxswain %s\n", COXSWAIN_VERSION);
    return 0;
}

static int cmd_help(int argc, char **argv);

static const struct subcommand subcommands[] = {
    {"version", "print the version", cmd_version},
    {"kube-watch", "run one informer and print what it sees", cmd_kube_watch},
    {"help", "list the subcommands", cmd_help},
    {"translate", "translate manifests to xDS offline and report on every object", cmd_translate},
    {"elect", "run only the leader election and log its transitions", cmd_elect},
    {"handover", "ask the leader to hand over (--to IDENTITY or --any) and wait for the next",
     cmd_handover},
    {"run", "run one replica of the control plane (the daemon)", cmd_run},
};

static void usage(FILE *out)
{
    fprintf(out, "usage: coxswain <command> [flags]\n\ncommands:\n");
    for (size_t i = 0; i < sizeof(subcommands) / sizeof(subcommands[0]); i++)
        fprintf(out, "  %-12s %s\n", subcommands[i].name, subcommands[i].summary);
    fprintf(out, "\n`coxswain <command> --help` describes a command's flags.\n");
}

static int cmd_help(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    usage(stdout);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)
        return cmd_help(argc - 1, argv + 1);
    if (strcmp(argv[1], "--version") == 0)
        return cmd_version(argc - 1, argv + 1);
    for (size_t i = 0; i < sizeof(subcommands) / sizeof(subcommands[0]); i++)
        if (strcmp(argv[1], subcommands[i].name) == 0)
            return subcommands[i].fn(argc - 1, argv + 1);
    fprintf(stderr, "coxswain: unknown command \"%s\"\n\n", argv[1]);
    usage(stderr);
    return 2;
}
