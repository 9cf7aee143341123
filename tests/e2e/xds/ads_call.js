// One raw ADS call with @grpc/grpc-js: the authentication cases of
// test_xds_auth.py, from a second gRPC implementation. Needs NODE_PATH to
// hold @grpc/grpc-js.
//
//   node ads_call.js '{"port": N, "request": "<base64 DiscoveryRequest>",
//                      "token": "...", "tls": {"ca", "key", "cert", "servername"}}'
//
// Prints one JSON line: {"code": "OK" or the status name, "details": "...",
// "responses": ["<base64>", ...]} after the first response (then cancels)
// or once the server ends the call.
'use strict';
const fs = require('fs');
const grpc = require('@grpc/grpc-js');

const args = JSON.parse(process.argv[2]);
const ADS = '/envoy.service.discovery.v3.AggregatedDiscoveryService/StreamAggregatedResources';
let creds = grpc.credentials.createInsecure();
const options = {};
if (args.tls) {
  const rd = (p) => (p ? fs.readFileSync(p) : null);
  creds = grpc.credentials.createSsl(rd(args.tls.ca), rd(args.tls.key), rd(args.tls.cert));
  if (args.tls.servername) options['grpc.ssl_target_name_override'] = args.tls.servername;
}
const client = new grpc.Client('127.0.0.1:' + args.port, creds, options);
const md = new grpc.Metadata();
if (args.token) md.set('authorization', 'Bearer ' + args.token);
const id = (b) => b;
const deadline = new Date(Date.now() + (args.timeout || 10) * 1000);
const call = client.makeBidiStreamRequest(ADS, id, id, md, {deadline});
const out = {code: null, details: '', responses: []};
let done = false;
function finish(code, details) {
  if (done) return;
  done = true;
  out.code = code;
  out.details = details || '';
  process.stdout.write(JSON.stringify(out) + '\n');
  client.close();
  process.exit(0);
}
call.on('data', (b) => {
  out.responses.push(Buffer.from(b).toString('base64'));
  call.cancel();
  finish('OK', '');
});
call.on('error', (e) => finish(grpc.status[e.code], e.details));
call.on('end', () => finish('OK', ''));
call.write(Buffer.from(args.request, 'base64'));
