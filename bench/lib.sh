# Shared by bench/compare.sh and bench/profile.sh (sourced, not run).

# A free TCP port on 127.0.0.1.
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# Waits up to 30 s for `curl -fs URL [extra curl args...]` to succeed.
wait_for() {
  for _ in $(seq 1 3000); do
    if curl -fs -o /dev/null "$@"; then return 0; fi
    sleep 0.01
  done
  echo "not ready: $*" >&2
  return 1
}

# The start of an nginx config whose files all stay in DIR, up to the opening of its
# `http` block: no access log, keep-alive for a million requests per connection.
nginx_head() { # DIR
  cat <<EOF
worker_processes auto;
pid $1/nginx.pid;
error_log $1/nginx-error.log warn;
daemon on;
events { worker_connections 4096; }
http {
  access_log off;
  keepalive_requests 1000000;
  client_body_temp_path $1/body;
  proxy_temp_path $1/proxy;
  fastcgi_temp_path $1/fastcgi;
  uwsgi_temp_path $1/uwsgi;
  scgi_temp_path $1/scgi;
EOF
}

# The nginx reverse proxy the broker is compared with: a server on 127.0.0.1:PORT passing
# everything to the `billing` upstream block over kept-alive HTTP/1.1 connections.
nginx_proxy_server() { # PORT
  cat <<EOF
  server {
    listen 127.0.0.1:$1;
    location / {
      proxy_pass http://billing;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
    }
  }
EOF
}

# Installs, with apt-get (as root, or with sudo), each Debian package whose command is
# absent: `install_missing command:package...`. Sets `nginx_bin` to nginx's path.
install_missing() {
  local need=() pair sudo=""
  for pair in "$@"; do
    command -v "${pair%%:*}" >/dev/null || [[ -x /usr/sbin/${pair%%:*} ]] || need+=("${pair#*:}")
  done
  if ((${#need[@]})); then
    [[ $(id -u) -ne 0 ]] && sudo=sudo
    $sudo apt-get update -q
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q "${need[@]}"
  fi
  nginx_bin=$(command -v nginx || echo /usr/sbin/nginx)
}

# The median of its integer arguments (the upper one of an even count).
median() { printf '%s\n' "$@" | sort -n | sed -n "$((($# + 1) / 2))p"; }

# The 50 Cedar policies of the `50 policies` figures (docs/policy.md), written to
# DIR/bench.cedar: every one of them in the slice of the proxied read (a hosting read),
# the caller (a key without roles) cut to two of them.
bench_policies() { # DIR
  mkdir -p "$1"
  {
    echo '@id("reads") permit(principal, action in Action::"read", resource) when { resource.tier == "agent_ready" };'
    echo '@id("no-destruction") forbid(principal, action in Action::"destructive", resource) unless { principal in Role::"admin" };'
    echo '@id("contractors") forbid(principal in Role::"contractor", action in Action::"write", resource) when { !context.dryRun };'
    echo '@id("admins") permit(principal in Role::"admin", action, resource);'
    echo '@id("hosting-team") permit(principal in Role::"hosting-team", action in Action::"hosting", resource);'
    for i in $(seq 1 45); do
      echo "@id(\"team-$i\") permit(principal in Role::\"team-$i\", action in Action::\"hosting\", resource) when { resource.tier == \"agent_ready\" && !context.dryRun };"
    done
  } > "$1/bench.cedar"
}
