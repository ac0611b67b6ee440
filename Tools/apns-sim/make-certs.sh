#!/usr/bin/env bash
# make-certs.sh DIR [SAN...]: a self-signed CA (DIR/ca.pem) and a server certificate it signed
# (DIR/cert.pem, DIR/key.pem) for 127.0.0.1 and localhost, plus each extra subject alternative
# name given (`DNS:apns-sim` for the simulator's container), for the APNs simulator.
# Idempotent: existing files are kept, so clients that already trust ca.pem keep working.
set -euo pipefail
dir="${1:?usage: make-certs.sh DIR [SAN...]}"
shift
sans="IP:127.0.0.1,DNS:localhost"
for san in "$@"; do sans="$sans,$san"; done
mkdir -p "$dir"
cd "$dir"
if [ -s ca.pem ] && [ -s cert.pem ] && [ -s key.pem ]; then
  exit 0
fi
umask 077
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 3650 \
  -subj "/CN=BuzzKit APNs simulator CA" -keyout ca-key.pem -out ca.pem \
  -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=127.0.0.1" \
  -keyout key.pem -out server.csr 2>/dev/null
cat >server.ext <<EXT
basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=serverAuth
subjectAltName=$sans
EXT
openssl x509 -req -in server.csr -CA ca.pem -CAkey ca-key.pem -CAcreateserial -days 3650 \
  -extfile server.ext -out cert.pem 2>/dev/null
rm -f server.csr server.ext ca.srl
chmod 644 ca.pem cert.pem
