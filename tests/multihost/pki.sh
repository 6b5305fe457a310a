# Sourced by the multi-host tests: a throwaway PKI made with the openssl CLI (EC P-256, two days).
#   mh_pki DIR NAME=SAN...  DIR/ca.pem; per NAME a server certificate DIR/NAME.{pem,key} for
#                           the subjectAltName SAN (IP:10.1.2.3, DNS:node1,DNS:node2, ...);
#                           DIR/learner.{pem,key}, a client certificate the CA signed.
#                           Returns 1 (openssl's output in DIR/openssl.log) on failure.
mh_pki() {
  local dir=$1 arg name san
  local key=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes)
  shift
  mkdir -p "$dir"
  leaf() {  # NAME CN EXTENSIONS: NAME.{pem,key} signed by the CA
    printf '%b\n' "$3" > "$dir/$1.ext"
    openssl req -new "${key[@]}" -subj "/CN=$2" -keyout "$dir/$1.key" -out "$dir/$1.csr" &&
      openssl x509 -req -days 2 -in "$dir/$1.csr" -CA "$dir/ca.pem" -CAkey "$dir/ca.key" \
        -CAcreateserial -extfile "$dir/$1.ext" -out "$dir/$1.pem"
  } >> "$dir/openssl.log" 2>&1
  openssl req -x509 "${key[@]}" -days 2 -subj /CN=allot-multihost-ca -keyout "$dir/ca.key" \
    -out "$dir/ca.pem" >> "$dir/openssl.log" 2>&1 || return 1
  leaf learner learner "extendedKeyUsage=clientAuth" || return 1
  for arg in "$@"; do
    name=${arg%%=*}
    san=${arg#*=}
    leaf "$name" "$name" "subjectAltName=$san\nextendedKeyUsage=serverAuth" || return 1
  done
}
