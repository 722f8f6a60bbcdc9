#!/usr/bin/env bash
# Makes sure the PostgreSQL and RabbitMQ the tests use answer on 127.0.0.1, starting them with
# the machine's own start commands when they do not. RabbitMQ counts as up only once its AMQP
# port accepts connections (its ping answers earlier than that).
set -euo pipefail

PG_PORT=${PG_PORT:-5432}
AMQP_PORT=${AMQP_PORT:-5672}

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

wait_port() { # name port seconds
  local name=$1 port=$2 deadline=$((SECONDS + $3))
  until port_open "$port"; do
    if (( SECONDS >= deadline )); then
      echo "ensure-services: $name did not open 127.0.0.1:$port within $3 s" >&2
      return 1
    fi
    sleep 1
  done
  echo "ensure-services: $name answers on 127.0.0.1:$port"
}

pg_ready() {
  if command -v pg_isready >/dev/null; then
    pg_isready -h 127.0.0.1 -p "$PG_PORT" -U postgres -q
  else
    port_open "$PG_PORT"
  fi
}

if ! pg_ready; then
  echo "ensure-services: starting PostgreSQL"
  if command -v pg_ctlcluster >/dev/null && [ -d /etc/postgresql ]; then
    pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -n1)" main start || true
  else
    echo "ensure-services: no pg_ctlcluster on this machine; start PostgreSQL on 127.0.0.1:$PG_PORT" >&2
  fi
  deadline=$((SECONDS + 60))
  until pg_ready; do
    if (( SECONDS >= deadline )); then echo "ensure-services: PostgreSQL did not come up" >&2; exit 1; fi
    sleep 1
  done
fi
echo "ensure-services: PostgreSQL answers on 127.0.0.1:$PG_PORT"

if ! port_open "$AMQP_PORT"; then
  echo "ensure-services: starting RabbitMQ"
  if command -v rabbitmq-server >/dev/null; then
    rabbitmq-server -detached || true
  else
    echo "ensure-services: no rabbitmq-server on this machine; start RabbitMQ on 127.0.0.1:$AMQP_PORT" >&2
  fi
fi
wait_port RabbitMQ "$AMQP_PORT" 120
