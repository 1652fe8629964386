# Sourced by bin/test: start throwaway PostgreSQL and Redis servers on free loopback ports, from
# Debian's postgresql and redis-server packages, unless TEST_DATABASE_URL / TEST_REDIS_URL are set.
# They live in a temporary folder that stop_test_services removes.

free_port() {
  .venv/bin/python -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

start_test_services() {
  services_dir=$(mktemp -d /tmp/auditapp-test-services.XXXXXX)
  chmod 755 "$services_dir"
  if [ -z "${TEST_DATABASE_URL:-}" ]; then
    local pg_bin
    pg_bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
    if [ -n "$pg_bin" ]; then
      local as_pg=() port
      port=$(free_port)
      mkdir -p "$services_dir/pg"
      if [ "$(id -u)" = 0 ]; then
        chown postgres "$services_dir/pg"
        as_pg=(runuser -u postgres --)  # initdb refuses to run as root
      fi
      "${as_pg[@]}" "$pg_bin/initdb" -D "$services_dir/pg/data" -U postgres -A trust -E UTF8 --no-sync >/dev/null
      "${as_pg[@]}" "$pg_bin/pg_ctl" -D "$services_dir/pg/data" -l "$services_dir/pg/log" -w -o \
        "-p $port -k $services_dir/pg -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off" \
        start >/dev/null
      pg_stop=("${as_pg[@]}" "$pg_bin/pg_ctl" -D "$services_dir/pg/data" -m fast stop)
      "$pg_bin/createdb" -h 127.0.0.1 -p "$port" -U postgres auditapp
      export TEST_DATABASE_URL="postgres://postgres@127.0.0.1:$port/auditapp"
      echo "Started PostgreSQL $("$pg_bin/postgres" --version | awk '{print $3}') on 127.0.0.1:$port"
    fi
  fi
  if [ -z "${TEST_REDIS_URL:-}" ] && command -v redis-server >/dev/null; then
    local port
    port=$(free_port)
    redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --daemonize yes \
      --dir "$services_dir" --pidfile "$services_dir/redis.pid" --logfile "$services_dir/redis.log"
    for _ in $(seq 50); do [ -s "$services_dir/redis.pid" ] && break; sleep 0.1; done
    export TEST_REDIS_URL="redis://127.0.0.1:$port/0"
    echo "Started $(redis-server --version | awk '{print $1, $2, $3}') on 127.0.0.1:$port"
  fi
}

stop_test_services() {
  if [ -n "${pg_stop:-}" ]; then "${pg_stop[@]}" >/dev/null 2>&1 || true; fi
  if [ -s "${services_dir:-/nonexistent}/redis.pid" ]; then kill "$(cat "$services_dir/redis.pid")" 2>/dev/null || true; fi
  [ -n "${services_dir:-}" ] && rm -rf "$services_dir"
}
