#!/usr/bin/env bash
# Generates the TLS test material under tests/data/tls/ (committed; run once,
# again only to change it). Test-only keys: never use them anywhere else.
#
#   ca.crt / ca.key             a test CA, 2024-01-01 .. 2124-01-01
#   www.{crt,key}               www.example.com, example.com
#   www-rotated.{crt,key}       the same names, another key (rotation tests)
#   shop.{crt,key}              *.shop.example.com
#   expired.{crt,key}           old.example.com, 2000-01-01 .. 2001-01-01
#   future.{crt,key}            future.example.com, 2200-01-01 .. 2201-01-01
#   backend.{crt,key}           backend.internal (an upstream's server)
#   client.{crt,key}            CN coxswain-client, clientAuth (mTLS to a backend)
#   other.key                   a key that matches none of the certificates
#   chain.crt                   www.crt followed by ca.crt
#
# Certificates are signed by `openssl ca` with explicit start and end dates
# (OpenSSL 3.0's req/x509 only know "days from now").
set -euo pipefail
cd "$(dirname "$0")"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }

cat >"$work/ca.cnf" <<CNF
[ ca ]
default_ca = test
[ test ]
dir = $work
database = $work/index.txt
new_certs_dir = $work
serial = $work/serial
default_md = sha256
policy = any
unique_subject = no
copy_extensions = none
[ any ]
commonName = supplied
[ v3_ca ]
basicConstraints = critical, CA:true
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash
[ server ]
basicConstraints = CA:false
keyUsage = critical, digitalSignature
extendedKeyUsage = serverAuth
subjectAltName = \$ENV::SAN
[ client ]
basicConstraints = CA:false
keyUsage = critical, digitalSignature
extendedKeyUsage = clientAuth
CNF
: >"$work/index.txt"
echo 1000 >"$work/serial"

# sign NAME CN START END EXT [SAN]
sign() {
    local name=$1 cn=$2 start=$3 end=$4 ext=$5 san=${6:-DNS:unused}
    openssl req -new -key "$name.key" -subj "/CN=$cn" -out "$work/$name.csr" 2>/dev/null
    SAN=$san openssl ca -batch -config "$work/ca.cnf" -cert ca.crt -keyfile ca.key \
        -startdate "$start" -enddate "$end" -extensions "$ext" -notext \
        -in "$work/$name.csr" -out "$name.crt" 2>/dev/null
}

key ca.key
openssl req -new -key ca.key -subj "/CN=coxswain test CA" -out "$work/ca.csr" 2>/dev/null
SAN=DNS:unused openssl ca -batch -selfsign -config "$work/ca.cnf" -keyfile ca.key \
    -startdate 20240101000000Z -enddate 21240101000000Z -extensions v3_ca -notext \
    -in "$work/ca.csr" -out ca.crt 2>/dev/null

LONG=(20240101000000Z 21240101000000Z)
for n in www www-rotated shop expired future backend client other; do key $n.key; done
sign www www.example.com "${LONG[@]}" server "DNS:www.example.com,DNS:example.com"
sign www-rotated www.example.com "${LONG[@]}" server "DNS:www.example.com,DNS:example.com"
sign shop "*.shop.example.com" "${LONG[@]}" server "DNS:*.shop.example.com"
sign expired old.example.com 20000101000000Z 20010101000000Z server "DNS:old.example.com"
sign future future.example.com 22000101000000Z 22010101000000Z server "DNS:future.example.com"
sign backend backend.internal "${LONG[@]}" server "DNS:backend.internal"
sign client coxswain-client "${LONG[@]}" client
cat www.crt ca.crt >chain.crt
echo "generated in $(pwd)"
