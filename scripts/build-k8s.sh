#!/usr/bin/env bash
# Builds the test control plane — etcd, kube-apiserver, kube-controller-manager,
# kube-scheduler, and kwok — from the pinned versions in tools/k8s/go.mod into
# ~/.cache/trialform/k8s/<version>/ (or $TRIALFORM_K8S_CACHE), and the Kubeflow
# training operator with its CRDs (from the module's manifests/base/crds) into
# the same directory. Reuses what is
# there: a build stamp holds the hash of tools/k8s/go.{mod,sum} and the Go
# version, and nothing is rebuilt while it matches. Prints the directory.
#
#   scripts/build-k8s.sh            build (or reuse) and print the bin dir
#   scripts/build-k8s.sh -print     only print the dir (exit 1 when not built)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
tools="$root/tools/k8s"
k8s_version=$(awk '$1=="k8s.io/kubernetes"{print $2; exit}' "$tools/go.mod")
etcd_version=$(awk '$1=="go.etcd.io/etcd/server/v3"{print $2; exit}' "$tools/go.mod")
# kwok simulates nodes for the scale tests and the bench; it is built with its
# own go.mod (go install), which pins its Kubernetes libraries.
kwok_version=v0.7.0
# The Kubeflow training operator (kubeflow.org/v1 TFJob, PyTorchJob, MPIJob,
# XGBoostJob, PaddleJob, MXJob): a module without replace directives, built
# with go install like kwok; its CRDs come from the same module zip.
training_operator_version=v1.8.1
dir="${TRIALFORM_K8S_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/trialform/k8s/$k8s_version}"
stamp="$(cat "$tools/go.mod" "$tools/go.sum" "$tools/cmd/etcd/main.go" | sha256sum | cut -c1-16) $(go env GOVERSION)"

if [ "${1:-}" = "-print" ]; then
  [ -f "$dir/.stamp" ] && [ "$(cat "$dir/.stamp")" = "$stamp" ] || exit 1
  echo "$dir"; exit 0
fi

build_kwok() {
  local kstamp="$kwok_version $(go env GOVERSION)"
  if [ -x "$dir/kwok" ] && [ -f "$dir/.stamp-kwok" ] && [ "$(cat "$dir/.stamp-kwok")" = "$kstamp" ]; then
    return 0
  fi
  local start=$(date +%s)
  echo "build-k8s: go install sigs.k8s.io/kwok/cmd/kwok@$kwok_version into $dir" >&2
  GOBIN="$dir" CGO_ENABLED=0 GOFLAGS= go install -trimpath -ldflags "-s -w" "sigs.k8s.io/kwok/cmd/kwok@$kwok_version"
  echo "build-k8s: kwok built in $(( $(date +%s) - start ))s" >&2
  echo "$kstamp" > "$dir/.stamp-kwok"
}

build_training_operator() {
  local mod=github.com/kubeflow/training-operator
  local tstamp="$training_operator_version $(go env GOVERSION)"
  if [ -x "$dir/training-operator" ] && [ -f "$dir/.stamp-training-operator" ] && [ "$(cat "$dir/.stamp-training-operator")" = "$tstamp" ]; then
    return 0
  fi
  local start=$(date +%s)
  echo "build-k8s: go install $mod/cmd/training-operator.v1@$training_operator_version into $dir" >&2
  local tmp
  tmp=$(mktemp -d)
  GOBIN="$tmp" CGO_ENABLED=0 GOFLAGS= go install -trimpath -ldflags "-s -w" "$mod/cmd/training-operator.v1@$training_operator_version"
  mv "$tmp/training-operator.v1" "$dir/training-operator"
  rmdir "$tmp"
  local src
  src=$(cd /tmp && GOFLAGS= go mod download -json "$mod@$training_operator_version" | awk -F'"' '$2=="Dir"{print $4}')
  rm -rf "$dir/training-operator-crds"
  mkdir -p "$dir/training-operator-crds"
  cp "$src"/manifests/base/crds/kubeflow.org_*.yaml "$dir/training-operator-crds/"
  chmod 644 "$dir"/training-operator-crds/*.yaml
  echo "build-k8s: training-operator built in $(( $(date +%s) - start ))s" >&2
  echo "$tstamp" > "$dir/.stamp-training-operator"
}

if [ -f "$dir/.stamp" ] && [ "$(cat "$dir/.stamp")" = "$stamp" ]; then
  build_kwok
  build_training_operator
  echo "$dir"; exit 0
fi

mkdir -p "$dir"
rm -f "$dir/.stamp"
cd "$tools"
maj=${k8s_version#v}; min=${maj#*.}; maj=${maj%%.*}; min=${min%%.*}
ldflags="-s -w"
for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ldflags+=" -X $p.gitVersion=$k8s_version -X $p.gitMajor=$maj -X $p.gitMinor=$min -X $p.gitTreeState=clean"
done
ldflags+=" -X go.etcd.io/etcd/api/v3/version.GitSHA=$etcd_version"
pkgs=(./cmd/etcd k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager k8s.io/kubernetes/cmd/kube-scheduler)
start=$(date +%s)
echo "build-k8s: building ${pkgs[*]} (k8s $k8s_version, etcd $etcd_version) into $dir" >&2
CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -ldflags "$ldflags" -o "$dir/" "${pkgs[@]}"
echo "build-k8s: built in $(( $(date +%s) - start ))s" >&2
echo "$stamp" > "$dir/.stamp"
build_kwok
build_training_operator
echo "$dir"
