#!/usr/bin/env bash
# deploy/lib/check_kubernetes.sh: the Kubernetes manifests against tools no one here wrote.
# - Every kustomization under deploy/kubernetes/ renders with `kubectl kustomize` from Debian's
#   kubernetes-client package (1.20, kustomize 2.0: the oldest kustomize the files promise to
#   work with). The package is unpacked into .buzzkit/tools/ rather than installed: its
#   /usr/bin/kubectl would collide with any other kubectl package on the machine.
# - Every manifest file and every rendered kustomization validates with kubernetes-validate
#   (pinned in common.sh; it bundles the schemas, so this works offline) against Kubernetes
#   $BK_KUBERNETES_VERSION, strictly (no property the schema does not know). Custom resources have
#   no schema there: only KEDA's (keda.sh) are allowed through, and they are named in the output.
# Exits non-zero with the validator's or kustomize's message on the first kind of problem.
set -euo pipefail
source "$(dirname "$0")/common.sh"
cd "$BK_ROOT"

BK_KUBERNETES_VERSION="${BK_KUBERNETES_VERSION:-1.37.0}"
MANIFESTS="deploy/kubernetes"
TOOLS="$BK_ROOT/.buzzkit/tools"
WORK="$(mktemp -d /tmp/bk-kubernetes.XXXXXX)"
trap 'rm -rf "$WORK"' EXIT

# Debian's kubectl, unpacked from the package apt would install (cached by package version).
debian_kubectl() {
  local version dir
  version="$(apt-cache policy kubernetes-client 2>/dev/null | awk '/Candidate:/ {print $2}')"
  [ -n "$version" ] && [ "$version" != "(none)" ] || bk_die "Debian's kubernetes-client is not in the apt sources (apt-get update?)"
  dir="$TOOLS/kubernetes-client-$version"
  if [ ! -x "$dir/usr/bin/kubectl" ]; then
    mkdir -p "$WORK/deb"
    (cd "$WORK/deb" && apt-get download -q "kubernetes-client=$version" >/dev/null 2>"$WORK/download.log") \
      || { cat "$WORK/download.log" >&2; bk_die "apt-get download kubernetes-client failed"; }
    mkdir -p "$dir"
    dpkg-deb -x "$WORK"/deb/kubernetes-client_*.deb "$dir"
  fi
  echo "$dir/usr/bin/kubectl"
}

KUBECTL="$(debian_kubectl)"
bk_log "kubernetes: rendering with Debian's $("$KUBECTL" version --client --short 2>/dev/null || "$KUBECTL" version --client | head -1)"
files=()
while IFS= read -r file; do files+=("$file"); done < <(find "$MANIFESTS" -name '*.yaml' \
  ! -name kustomization.yaml ! -name '*-patch.yaml' | sort)
for dir in $(find "$MANIFESTS" -name kustomization.yaml -exec dirname {} \; | sort); do
  out="$WORK/rendered-$(echo "${dir#"$MANIFESTS"/}" | tr / -).yaml"
  "$KUBECTL" kustomize "$dir" >"$out" 2>"$WORK/kustomize.log" \
    || { cat "$WORK/kustomize.log" >&2; bk_die "kubectl kustomize $dir failed"; }
  files+=("$out")
done

"$BK_VENV/bin/kubernetes-validate" --strict --quiet -k "$BK_KUBERNETES_VERSION" "${files[@]}" >"$WORK/validate.log" 2>&1 \
  || { cat "$WORK/validate.log" >&2; bk_die "kubernetes-validate found invalid manifests"; }
unknown="$(grep "Couldn't find schema" "$WORK/validate.log" | grep -v 'api version keda.sh/' || true)"
[ -z "$unknown" ] || { echo "$unknown" >&2; bk_die "manifests of kinds kubernetes-validate has no schema for (only KEDA's are expected)"; }
rendered="$(find "$MANIFESTS" -name kustomization.yaml | wc -l)"
bk_log "kubernetes: ok ($(( ${#files[@]} - rendered )) manifest files and $rendered rendered kustomizations valid for Kubernetes $BK_KUBERNETES_VERSION; no schema for: $(grep -o 'kind [A-Za-z]* with api version [^ ]*' "$WORK/validate.log" | sort -u | sed 's/kind \([A-Za-z]*\) with api version /\1 /' | paste -sd, - || echo none))"
