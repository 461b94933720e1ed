#!/usr/bin/env bash
# A throwaway certificate authority and a server certificate signed by it, for the TLS
# tests of the local database servers (postgres.sh, mariadb.sh):
#   test-certs.sh DIR   writes DIR/ca.pem, DIR/server.pem and DIR/server.key
# The server certificate is valid for the IP address 127.0.0.1 only (no DNS name), so a
# client that connects to "localhost" must refuse it: the tests check host names with that.
set -euo pipefail
DIR="${1:?usage: $0 DIR}"
mkdir -p "$DIR"
cd "$DIR"
openssl req -x509 -newkey rsa:2048 -nodes -days 7 -keyout ca.key -out ca.pem \
  -subj "/CN=Switchyard test CA" \
  -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
  2>/dev/null
openssl req -newkey rsa:2048 -nodes -keyout server.key -out server.csr \
  -subj "/CN=127.0.0.1" 2>/dev/null
printf '%s\n' "subjectAltName=IP:127.0.0.1" "basicConstraints=critical,CA:FALSE" \
  "keyUsage=critical,digitalSignature,keyEncipherment" "extendedKeyUsage=serverAuth" >server.ext
openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 7 \
  -out server.pem -extfile server.ext 2>/dev/null
rm -f ca.key ca.srl server.csr server.ext
chmod 600 server.key
