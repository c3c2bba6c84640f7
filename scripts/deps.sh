#!/usr/bin/env bash
# Installs what the test suite needs on a fresh Debian machine: Go's module
# downloads, python3 for real trial processes, Debian's scikit-learn for
# the sklearn example, openssh-server (sshd on 127.0.0.1 stands in for
# remote machines), Debian's Optuna for the tuner benchmark (bench/tuners),
# Debian's chromium (the dashboard's browser tests, internal/ui), Debian's
# nodejs and npm (make ui-check rebuilds the dashboard's bundle),
# Debian's postgresql (a real server for the pg state backend, internal/pgtest)
# and gcc (the race detector needs cgo). It fails, naming what is missing,
# rather than let the tests skip. Safe to run again.
set -euo pipefail

# fail stops here: the test suite fails rather than skips without a
# dependency (TRIALFORM_REQUIRE_ALL=1 in CI), so say which one now.
fail() {
  echo "deps: $*" >&2
  exit 1
}

apt_install() {
  if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
  if [ ! -f /tmp/.trialform-apt-updated ]; then
    $SUDO apt-get update -qq && touch /tmp/.trialform-apt-updated
  fi
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "$@"
}

# The Go module proxy and npm's registry are reached over TLS: a minimal
# Debian has no CA bundle.
if [ ! -s /etc/ssl/certs/ca-certificates.crt ]; then
  echo "deps: installing ca-certificates (go mod download and npm reach their servers over TLS)"
  apt_install ca-certificates || fail "could not install ca-certificates (go mod download needs them)"
fi

if ! command -v python3 >/dev/null 2>&1; then
  echo "deps: installing python3"
  apt_install python3
fi

if ! command -v pgrep >/dev/null 2>&1; then
  echo "deps: installing procps (pgrep, used by the end-to-end tests)"
  apt_install procps
fi

# -I: not the working directory's modules (this repository's schema/ would
# pass for Python's schema package), nor PYTHONPATH or the user's site.
if ! /usr/bin/python3 -I -c 'import sklearn' >/dev/null 2>&1; then
  echo "deps: installing python3-sklearn (for examples/sklearn-digits)"
  apt_install python3-sklearn || fail "could not install python3-sklearn (examples/sklearn-digits and the tuner benchmark need it)"
fi

if [ ! -x /usr/sbin/sshd ]; then
  echo "deps: installing openssh-server (real sshd for the remote platform's tests)"
  apt_install openssh-server || fail "could not install openssh-server (the remote platform's tests need /usr/sbin/sshd)"
fi

if ! /usr/bin/python3 -I -c 'import optuna' >/dev/null 2>&1; then
  echo "deps: installing python3-optuna (the peer of the tuner benchmark, bench/tuners)"
  apt_install python3-optuna || fail "could not install python3-optuna (the tuner benchmark's peer tests need it)"
fi

if ! command -v gcc >/dev/null 2>&1; then
  echo "deps: installing gcc (go test -race needs cgo)"
  apt_install gcc libc6-dev
fi

# node and npm: make ui-check rebuilds the dashboard's bundle from web/ to
# compare it with the committed internal/ui/assets (esbuild needs node 18+).
if ! command -v npm >/dev/null 2>&1 || ! command -v node >/dev/null 2>&1; then
  echo "deps: installing nodejs and npm (make ui-check rebuilds the dashboard's bundle)"
  apt_install nodejs npm || fail "could not install nodejs and npm (make ui-check needs them)"
fi
node_major=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
[ "$node_major" -ge 18 ] || fail "node $(node --version 2>/dev/null) is older than 18, which esbuild (web/package-lock.json) needs"

if ! command -v chromium >/dev/null 2>&1; then
  echo "deps: installing chromium (the dashboard's browser tests, internal/ui)"
  apt_install chromium || fail "could not install chromium (the dashboard's browser tests need it)"
fi

if ! /usr/bin/python3 -I -c 'import schema' >/dev/null 2>&1; then
  echo "deps: installing python3-schema (NNI's GP and Metis tuners, the NNI peer of bench/tuners)"
  apt_install python3-schema || fail "could not install python3-schema (the NNI peer tests of bench/tuners need it)"
fi

for tool in git curl; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "deps: installing $tool (provenance and the controller's end-to-end tests)"
    apt_install "$tool" || fail "could not install $tool (provenance.txtar and controller*.txtar need it)"
  fi
done

if ! ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1; then
  echo "deps: installing postgresql (a real server for the pg state backend's tests, internal/pgtest)"
  apt_install postgresql || fail "could not install postgresql (the pg state backend's tests need /usr/lib/postgresql/*/bin/initdb and pg_ctl)"
fi

if ! command -v openssl >/dev/null 2>&1; then
  echo "deps: installing openssl (certificates of the test Kubernetes control plane)"
  apt_install openssl
fi

# Check what the tests use, whatever installed it.
command -v python3 >/dev/null 2>&1 || fail "python3 is not on PATH (real trial processes need it)"
/usr/bin/python3 -I -c 'import sklearn, optuna, schema' || fail "/usr/bin/python3 cannot import sklearn, optuna and schema"
[ -x /usr/sbin/sshd ] || fail "/usr/sbin/sshd is missing (Debian package openssh-server)"
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || fail "/usr/lib/postgresql/*/bin/initdb is missing (Debian package postgresql)"
command -v ssh-agent >/dev/null 2>&1 || fail "ssh-agent is missing (Debian package openssh-client)"

go mod download
(cd tools/k8s && go mod download)
