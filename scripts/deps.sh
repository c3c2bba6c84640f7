#!/usr/bin/env bash
# Installs what the test suite needs on a fresh Debian machine: Go's module
# downloads, python3 for real trial processes, Debian's scikit-learn for
# the sklearn example, openssh-server (sshd on 127.0.0.1 stands in for
# remote machines) and Debian's Optuna for the tuner benchmark
# (bench/tuners). Safe to run again.
set -euo pipefail

apt_install() {
  if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
  if [ ! -f /tmp/.trialform-apt-updated ]; then
    $SUDO apt-get update -qq && touch /tmp/.trialform-apt-updated
  fi
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "$@"
}

if ! command -v python3 >/dev/null 2>&1; then
  echo "deps: installing python3"
  apt_install python3
fi

if ! command -v pgrep >/dev/null 2>&1; then
  echo "deps: installing procps (pgrep, used by the end-to-end tests)"
  apt_install procps
fi

if ! /usr/bin/python3 -c 'import sklearn' >/dev/null 2>&1; then
  echo "deps: installing python3-sklearn (for examples/sklearn-digits)"
  apt_install python3-sklearn || echo "deps: could not install python3-sklearn; its test will say so"
fi

if [ ! -x /usr/sbin/sshd ]; then
  echo "deps: installing openssh-server (real sshd for the remote platform's tests)"
  apt_install openssh-server || echo "deps: could not install openssh-server; the remote SSH tests will be skipped"
fi

if ! /usr/bin/python3 -c 'import optuna' >/dev/null 2>&1; then
  echo "deps: installing python3-optuna (the peer of the tuner benchmark, bench/tuners)"
  apt_install python3-optuna || echo "deps: could not install python3-optuna; the tuner benchmark's peer tests will skip"
fi

if ! /usr/bin/python3 -c 'import schema' >/dev/null 2>&1; then
  echo "deps: installing python3-schema (NNI's GP and Metis tuners, the NNI peer of bench/tuners)"
  apt_install python3-schema || echo "deps: could not install python3-schema; the NNI peer cannot run"
fi

if ! command -v openssl >/dev/null 2>&1; then
  echo "deps: installing openssl (certificates of the test Kubernetes control plane)"
  apt_install openssl
fi

go mod download
(cd tools/k8s && go mod download)
