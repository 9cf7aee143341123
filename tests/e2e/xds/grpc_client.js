// @grpc/grpc-js-xds (npm) driven by the same line protocol as
// grpc_client.py: a second, independent xDS client implementation for e2e
// tests of coxswain's xDS server. Needs NODE_PATH to hold @grpc/grpc-js and
// @grpc/grpc-js-xds, and GRPC_XDS_BOOTSTRAP.
//
//   node grpc_client.js TARGET
'use strict';
const grpc = require('@grpc/grpc-js');
require('@grpc/grpc-js-xds').register();
const readline = require('readline');

const target = process.argv[2];
const client = new grpc.Client('xds:///' + target, grpc.credentials.createInsecure());
const id = (b) => b;
const mono = () => Number(process.hrtime.bigint()) / 1e9;

function one(path, timeoutS) {
  return new Promise((resolve) => {
    const deadline = new Date(Date.now() + timeoutS * 1000);
    client.makeUnaryRequest(path, id, id, Buffer.from('x'), new grpc.Metadata(), {deadline},
      (err, res) => {
        if (err) resolve({who: null, code: grpc.status[err.code], detail: err.details});
        else resolve({who: res.toString(), code: null, detail: null});
      });
  });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function handle(parts, first) {
  const [cmd, path] = parts;
  let timeout = first ? 10 : 2;
  if (cmd === 'call') {
    const ok = {}, err = {};
    let detail = '';
    for (let i = 0; i < Number(parts[2]); i++) {
      const r = await one(path, timeout);
      timeout = 2;
      if (r.who !== null) ok[r.who] = (ok[r.who] || 0) + 1;
      else { err[r.code] = (err[r.code] || 0) + 1; detail = r.detail; }
    }
    return {ok, err, detail};
  }
  if (cmd === 'wait') {
    const end = mono() + Number(parts[3]);
    let n = 0;
    while (mono() < end) {
      const r = await one(path, timeout);
      timeout = 2;
      n++;
      if (r.who === parts[2]) return {found: true, t: mono(), n};
      await sleep(5);
    }
    return {found: false, n};
  }
  if (cmd === 'waitfail') {
    const end = mono() + Number(parts[2]);
    while (mono() < end) {
      const r = await one(path, 2);
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
  let first = true;
  for await (const line of rl) {
    const parts = line.trim().split(/\s+/);
    if (!parts[0]) continue;
    if (parts[0] === 'quit') break;
    const out = await handle(parts, first);
    first = false;
    process.stdout.write(JSON.stringify(out) + '\n');
  }
  client.close();
  process.exit(0);
}

main();
