/*
 * `coxswain run`: one replica of the control plane (see daemon.h). Parses
 * the flags (daemon_config.h), sets up logging and runs the daemon until
 * SIGTERM/SIGINT. Exit status: 0 after a clean shutdown, 1 when start-up
 * failed, 2 for bad flags.
 */
#include "cli.h"
#include "cx_log.h"
#include "daemon.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cmd_run(int argc, char **argv);

int cmd_run(int argc, char **argv)
{
    static struct daemon_config cfg; /* large: keep it off the stack */
    if (daemon_config_init(&cfg) != 0) {
        fprintf(stderr, "run: internal error: flag table too small\n");
        return 2;
    }
    char err[1024];
    int rc = daemon_config_parse(&cfg, argc, argv, err, sizeof(err));
    if (rc == 1) {
        daemon_config_usage(&cfg, stdout);
        daemon_config_free(&cfg);
        return 0;
    }
    if (rc != 0) {
        fprintf(stderr, "run: %s\n\n`coxswain run --help` lists the flags.\n", err);
        daemon_config_free(&cfg);
        return 2;
    }
    enum cx_log_format fmt;
    enum cx_log_level lvl;
    if (cx_log_parse_format(cfg.log_format, &fmt) != 0) {
        fprintf(stderr, "run: --log-format: \"%s\" is not text or json\n", cfg.log_format);
        daemon_config_free(&cfg);
        return 2;
    }
    if (cx_log_parse_level(cfg.log_level, &lvl) != 0) {
        fprintf(stderr, "run: --log-level: \"%s\" is not debug, info, warn or error\n",
                cfg.log_level);
        daemon_config_free(&cfg);
        return 2;
    }
    if (!cfg.identity || !*cfg.identity) {
        /* <POD_NAME or hostname>_<8 random hex>, decided once: the election,
         * the User-Agent and every JSON log line carry the same. */
        char id[ELECTION_IDENTITY_MAX];
        char *dup = NULL;
        if (election_identity_make(id, sizeof(id)) != 0 || !(dup = strdup(id))) {
            fprintf(stderr, "run: cannot make an identity (no randomness)\n");
            daemon_config_free(&cfg);
            return 1;
        }
        free(cfg.identity);
        cfg.identity = dup;
    }
    cx_log_setup(fmt, lvl, cfg.identity);
    rc = daemon_run(&cfg);
    daemon_config_free(&cfg);
    return rc;
}
