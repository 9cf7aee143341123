/* bench_xds's server process (bench/xdsbench_server.c). */
#ifndef XDSBENCH_H
#define XDSBENCH_H

#define XDSBENCH_GROUP    "bench/gw"
#define XDSBENCH_CLUSTERS 50

/* Runs an xDS server (auth: --xds-auth required with a reviewer that
 * answers every token at once as system:serviceaccount:bench:proxy; big:
 * that many Clusters, one of them changing with each push, instead of the
 * 50-cluster EDS world; tls_dir: serve TLS with tls_dir/server.{crt,key}
 * as xdsc_make_certs writes them, "" for h2c) until 'q' or EOF on
 * |cmd_fd|, then exits. Writes its port to |out_fd|, then per 's' the line
 * "rss_kb cpu_s bytes pushes acks streams heap h2_heap h2_resident". */
__attribute__((noreturn)) void xdsbench_run_server(int cmd_fd, int out_fd, int auth, int big,
                                                   const char *tls_dir);

#endif
