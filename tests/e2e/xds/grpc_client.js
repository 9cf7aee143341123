// @grpc/grpc-js-xds (npm) driven by the same line protocol as
// grpc_client.py: a second, independent xDS client implementation for e2e
// tests of coxswain's xDS server and the gateway features (one channel to
// xds:///TARGET for the life of the process, so a test can change the
// control plane between commands). Calls can carry request headers (what
// routes' hash policies read; grpc-js-xds 1.14 implements ring_hash with
// header hash policies, gRFC A42). Needs NODE_PATH to hold @grpc/grpc-js
// and @grpc/grpc-js-xds (mk/npm-xds.sh), and GRPC_XDS_BOOTSTRAP (whose
// node needs a locality).
//
// Commands on stdin, one JSON line answered on stdout for each:
//   call PATH N [HEADER=VALUE...]   N calls: {"ok": {backend: n}, "err": {code: n}, "detail": s}
//   until PATH SECS [HEADER=VALUE...]
//                                   until one succeeds: {"ok": b, "backend": s, "n": calls}
//   wait PATH BACKEND SECS          until BACKEND answers: {"found": b, "t": mono, "n": calls}
//   waitfail PATH SECS              until a call fails: {"failed": b, "code": s, "detail": s, "t": mono}
//   quit
// The first line printed is {"ready": true}. The backends
// (tests/e2e/xds/backend.py) answer with their own name. Times are
// CLOCK_MONOTONIC seconds, comparable with the test's own clock.
//
//   node grpc_client.js TARGET
'use strict';
const grpc = require('@grpc/grpc-js');
require('@grpc/grpc-js-xds').register();
const readline = require('readline');

const client = new grpc.Client('xds:///' + process.argv[2], grpc.credentials.createInsecure());
const id = (b) => b;
const mono = () => Number(process.hrtime.bigint()) / 1e9;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function one(path, headers, timeoutS) {
  const md = new grpc.Metadata();
  for (const [k, v] of headers) md.set(k, v);
  return new Promise((resolve) => {
    const deadline = new Date(Date.now() + timeoutS * 1000);
    client.makeUnaryRequest(path, id, id, Buffer.from('x'), md, {deadline}, (err, res) => {
      if (err) resolve({who: null, code: grpc.status[err.code], detail: err.details});
      else resolve({who: res.toString(), code: null, detail: null});
    });
  });
}

let first = 15; // the first call waits for the xDS resources
// the first call's deadline, then |later|
function deadline(later) {
  const t = first || later;
  first = 0;
  return t;
}

async function handle(parts) {
  const [cmd, path] = parts;
  if (cmd === 'call') {
    const headers = parts.slice(3).map((kv) => kv.split('=', 2));
    const out = {ok: {}, err: {}, detail: ''};
    for (let i = 0; i < Number(parts[2]); i++) {
      const r = await one(path, headers, deadline(5));
      if (r.who !== null) out.ok[r.who] = (out.ok[r.who] || 0) + 1;
      else { out.err[r.code] = (out.err[r.code] || 0) + 1; out.detail = r.detail; }
    }
    return out;
  }
  if (cmd === 'until') {
    const headers = parts.slice(3).map((kv) => kv.split('=', 2));
    const end = mono() + Number(parts[2]);
    const out = {ok: false, n: 0};
    while (mono() < end) {
      const r = await one(path, headers, deadline(2));
      out.n++;
      if (r.who !== null) return Object.assign(out, {ok: true, backend: r.who});
      out.detail = r.detail;
      await sleep(20);
    }
    return out;
  }
  if (cmd === 'wait') {
    const end = mono() + Number(parts[3]);
    let n = 0;
    while (mono() < end) {
      const r = await one(path, [], deadline(2));
      n++;
      if (r.who === parts[2]) return {found: true, t: mono(), n};
      await sleep(5);
    }
    return {found: false, n};
  }
  if (cmd === 'waitfail') {
    const end = mono() + Number(parts[2]);
    while (mono() < end) {
      const r = await one(path, [], deadline(2));
      if (r.who === null) return {failed: true, code: r.code, detail: r.detail, t: mono()};
      await sleep(5);
    }
    return {failed: false};
  }
  return {error: 'unknown command ' + cmd};
}

async function main() {
  process.stdout.write(JSON.stringify({ready: true}) + '\n');
  const rl = readline.createInterface({input: process.stdin});
  for await (const line of rl) {
    const parts = line.trim().split(/\s+/);
    if (!parts[0]) continue;
    if (parts[0] === 'quit') break;
    process.stdout.write(JSON.stringify(await handle(parts)) + '\n');
  }
  client.close();
  process.exit(0);
}

main();
