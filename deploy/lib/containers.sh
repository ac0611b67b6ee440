# Docker for deploy/containers, the container tests and bench/containers_scale.sh. Sourced after
# common.sh, never run.
#
# - bk_docker_ready: installs Debian's docker.io, docker-compose and debootstrap when missing and
#   starts dockerd when none answers (overlay2 where the kernel mounts overlay, vfs otherwise).
# - bk_base_images: every base image deploy/Dockerfile and the compose files name is present
#   locally, pulled, or (where the registry cannot be reached) built from Debian's packages as a
#   stand-in under the same name; stand-ins are kept between runs and rebuilt only when their
#   recipe changes.

BK_CT_STATE="${BK_CT_STATE:-$BK_ROOT/.buzzkit/containers}"
BK_CT_DOCKER_PACKAGES=(docker.io docker-compose debootstrap)
# Debian's mirror for the debootstrap'd base (the one apt already uses here, by default).
BK_DEBIAN_MIRROR="${BK_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
# Label on every stand-in image: what it stands in for, and the hash of the recipe it was built from.
BK_STANDIN_LABEL="dev.buzzkit.stand-in"
BK_STANDIN_RECIPE_LABEL="dev.buzzkit.stand-in.recipe"
# The legacy builder: docker-compose 1.29 builds with it too, so what we build is what it builds.
export DOCKER_BUILDKIT=0 COMPOSE_DOCKER_CLI_BUILD=0

# Debian's client (the daemon's own version) first: the machine may carry a newer one in
# /usr/local/bin without the plugins it expects.
bk_docker_path() { if [ -x /usr/bin/docker ]; then echo /usr/bin/docker; else command -v docker; fi; }
bk_docker() { "$(bk_docker_path)" "$@"; }

bk_docker_install() {
  local missing=() pkg
  for pkg in "${BK_CT_DOCKER_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || missing+=("$pkg")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  [ "$(id -u)" = 0 ] || bk_die "missing packages (${missing[*]}); install them or run as root"
  bk_log "installing from Debian: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# Whether this kernel mounts overlayfs on the filesystem under /var/lib/docker (dockerd's
# overlay2 driver); vfs (a full copy per layer) otherwise.
bk_overlay_works() {
  local dir
  dir="$(mktemp -d /var/tmp/bk-overlay.XXXXXX)" || return 1
  mkdir -p "$dir"/{lower,upper,work,merged}
  if mount -t overlay overlay -o "lowerdir=$dir/lower,upperdir=$dir/upper,workdir=$dir/work" "$dir/merged" 2>/dev/null; then
    umount "$dir/merged"; rm -rf "$dir"; return 0
  fi
  rm -rf "$dir"; return 1
}

# Starts dockerd when no daemon answers; remembers that we did (BK_CT_STATE/dockerd.pid) so
# bk_docker_stop_ours stops exactly that one. Dies with the reason when it cannot start.
bk_docker_start() {
  bk_docker info >/dev/null 2>&1 && return 0
  [ "$(id -u)" = 0 ] || bk_die "no Docker daemon answers and starting one needs root"
  mkdir -p "$BK_CT_STATE"
  local driver=() i
  if ! bk_overlay_works; then driver=(--storage-driver=vfs); fi
  bk_log "starting dockerd${driver[*]:+ (${driver[*]})}"
  setsid dockerd "${driver[@]}" --pidfile "$BK_CT_STATE/dockerd.pid.daemon" >"$BK_CT_STATE/dockerd.log" 2>&1 </dev/null &
  echo $! >"$BK_CT_STATE/dockerd.pid"
  for i in $(seq 1 120); do
    bk_docker info >/dev/null 2>&1 && return 0
    kill -0 "$(cat "$BK_CT_STATE/dockerd.pid")" 2>/dev/null || break
    sleep 0.5
  done
  tail -20 "$BK_CT_STATE/dockerd.log" >&2
  rm -f "$BK_CT_STATE/dockerd.pid"
  bk_die "dockerd did not start (log: $BK_CT_STATE/dockerd.log)"
}

bk_docker_ready() {
  bk_docker_install
  bk_docker_start
}

# Stops the dockerd bk_docker_start started (containers still running in it stop with it).
bk_docker_stop_ours() {
  local file="$BK_CT_STATE/dockerd.pid" pid i
  [ -f "$file" ] || return 0
  pid="$(cat "$file")"
  if kill -0 "$pid" 2>/dev/null; then
    bk_log "stopping the dockerd ./deploy/containers started (pid $pid)"
    kill -TERM "$pid" 2>/dev/null || true
    for i in $(seq 1 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null
  fi
  rm -f "$file"
}

# ---------------------------------------------------------------------------------------------
# Base images

# The base images the Dockerfile's stages and the compose files' services start from.
bk_base_image_names() {
  {
    # FROM lines' images, without the Dockerfile's own stages (FROM x AS name ... FROM name) and
    # `scratch` (Docker's reserved empty image: nothing to pull).
    awk 'toupper($1) == "FROM" { from[$2] = 1; if (toupper($3) == "AS") stage[$4] = 1 }
         END { for (image in from) if (!(image in stage) && image != "scratch") print image }' "$BK_ROOT/deploy/Dockerfile"
    grep -hE '^\s+image:' "$BK_ROOT"/deploy/docker-compose*.yml | awk '{print $2}' | grep -v '^buzzkit'
  } | sort -u
}

# The hash of a stand-in's recipe: rebuilt when it changes.
bk_standin_recipe() {
  case "$1" in
    debian:*) { declare -f bk_build_debian_standin; echo "$BK_DEBIAN_MIRROR"; } | sha256sum | cut -c1-16 ;;
    swift:*) { declare -f bk_build_swift_standin; swift --version 2>/dev/null; } | sha256sum | cut -c1-16 ;;
    *) cat "$(bk_standin_dir "$1")"/* | sha256sum | cut -c1-16 ;;
  esac
}

bk_standin_dir() { echo "$BK_ROOT/deploy/standins/${1%%:*}"; }

# Makes sure every base image exists locally. Prints (stderr) which stand-ins it built.
bk_base_images() {
  local name names built=() kept=()
  mkdir -p "$BK_CT_STATE"
  names="$(bk_base_image_names)"
  # Debian first: the other stand-ins are built on it.
  for name in debian:bookworm-slim $(grep -v '^debian:bookworm-slim$' <<<"$names"); do
    local label recipe
    label="$(bk_docker image inspect -f "{{ index .Config.Labels \"$BK_STANDIN_LABEL\" }}" "$name" 2>/dev/null || true)"
    if bk_docker image inspect "$name" >/dev/null 2>&1; then
      if [ -z "$label" ] || [ "$label" = "<no value>" ]; then continue; fi  # the real image
      recipe="$(bk_docker image inspect -f "{{ index .Config.Labels \"$BK_STANDIN_RECIPE_LABEL\" }}" "$name")"
      if [ "$recipe" = "$(bk_standin_recipe "$name")" ]; then kept+=("$name"); continue; fi
      bk_log "$name: stand-in recipe changed; rebuilding it"
    elif timeout 90 "$(bk_docker_path)" pull -q "$name" >/dev/null 2>"$BK_CT_STATE/pull.log"; then
      bk_log "$name: pulled from the registry"
      continue
    else
      bk_log "$name: the registry cannot be reached ($(tail -1 "$BK_CT_STATE/pull.log" | cut -c1-120)); building a stand-in"
    fi
    case "$name" in
      debian:*) bk_build_debian_standin "$name" ;;
      swift:*) bk_build_swift_standin "$name" ;;
      *)
        [ -d "$(bk_standin_dir "$name")" ] || bk_die "$name cannot be pulled and there is no stand-in recipe in deploy/standins/"
        bk_build_dockerfile_standin "$name"
        ;;
    esac
    built+=("$name")
  done
  [ ${#kept[@]} -gt 0 ] && bk_log "stand-in base images kept from an earlier run: ${kept[*]}"
  [ ${#built[@]} -gt 0 ] && bk_log "stand-in base images built now: ${built[*]}"
  return 0
}

bk_standin_changes() {
  local name="$1" what="$2"
  printf -- '--change\nLABEL %s="%s"\n--change\nLABEL %s=%s\n' \
    "$BK_STANDIN_LABEL" "$what" "$BK_STANDIN_RECIPE_LABEL" "$(bk_standin_recipe "$name")"
}

# debian:bookworm-slim: debootstrap's minbase, slimmed as the official image is (no docs, man
# pages or locales, apt lists and caches removed, dpkg told to skip them from now on).
bk_build_debian_standin() {
  local name="$1" root
  root="$(mktemp -d /var/tmp/bk-debian.XXXXXX)"
  bk_log "$name: debootstrap --variant=minbase bookworm from $BK_DEBIAN_MIRROR"
  debootstrap --variant=minbase bookworm "$root" "$BK_DEBIAN_MIRROR" >"$BK_CT_STATE/debootstrap.log" 2>&1 \
    || { tail -20 "$BK_CT_STATE/debootstrap.log" >&2; rm -rf "$root"; bk_die "debootstrap failed"; }
  cat >"$root/etc/dpkg/dpkg.cfg.d/docker-slim" <<'EOF'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/info/*
path-exclude /usr/share/locale/*
path-exclude /usr/share/lintian/*
EOF
  printf 'APT::Install-Recommends "false";\nAPT::Install-Suggests "false";\n' >"$root/etc/apt/apt.conf.d/docker-no-recommends"
  printf 'deb %s bookworm main\ndeb %s bookworm-updates main\ndeb http://deb.debian.org/debian-security bookworm-security main\n' \
    "$BK_DEBIAN_MIRROR" "$BK_DEBIAN_MIRROR" >"$root/etc/apt/sources.list"
  find "$root/usr/share/doc" -mindepth 1 -not -name copyright -not -type d -delete 2>/dev/null || true
  rm -rf "$root"/usr/share/{man,info,locale,lintian}/* "$root"/var/cache/apt/*.bin "$root"/var/cache/apt/archives/*.deb \
    "$root"/var/lib/apt/lists/* "$root"/var/log/* "$root"/tmp/*
  local changes=()
  mapfile -t changes < <(bk_standin_changes "$name" "debian:bookworm-slim from debootstrap")
  tar --numeric-owner -C "$root" -c . | bk_docker import "${changes[@]}" --change 'CMD ["bash"]' - "$name" >/dev/null \
    || { rm -rf "$root"; bk_die "docker import of the Debian base failed"; }
  rm -rf "$root"
}

# swift:6.3-bookworm: the Debian stand-in plus this machine's Swift toolchain in /usr (where the
# official image has it) and what it needs to compile and link (the official image adds more:
# the debugger's Python, gnupg for verifying toolchains).
bk_build_swift_standin() {
  local name="$1" toolchain container="bk-swift-standin-$$"
  toolchain="$(dirname "$(dirname "$(readlink -f "$(command -v swift)")")")"
  [ -x "$toolchain/bin/swift-frontend" ] || bk_die "no Swift toolchain found for the $name stand-in"
  bk_log "$name: the Debian stand-in plus the toolchain in $toolchain ($(swift --version 2>/dev/null | head -1))"
  bk_docker rm -f "$container" >/dev/null 2>&1 || true
  bk_docker run --name "$container" -v "$toolchain:/toolchain:ro" debian:bookworm-slim bash -euc '
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends binutils git libc6-dev libcurl4 libedit2 libgcc-12-dev \
      libncurses6 libsqlite3-0 libstdc++-12-dev libxml2 pkg-config tzdata zlib1g-dev >/dev/null
    rm -rf /var/lib/apt/lists/*
    # Only what builds: the debugger, language servers and documentation tools stay behind.
    tar -C /toolchain -c --exclude="bin/lldb*" --exclude="lib/liblldb*" --exclude=bin/sourcekit-lsp \
      --exclude=bin/clangd --exclude=bin/docc --exclude="lib/libsourcekitd*" --exclude="lib/libSwiftSourceKit*" . \
      | tar -C /usr -x' >"$BK_CT_STATE/swift-standin.log" 2>&1 \
    || { tail -20 "$BK_CT_STATE/swift-standin.log" >&2; bk_docker rm -f "$container" >/dev/null 2>&1; bk_die "building the $name stand-in failed"; }
  local changes=()
  mapfile -t changes < <(bk_standin_changes "$name" "$name from this machine's toolchain")
  bk_docker commit "${changes[@]}" --change 'CMD ["swift", "--version"]' "$container" "$name" >/dev/null
  bk_docker rm -f "$container" >/dev/null
}

# postgres:15, redis:7: deploy/standins/<name>/Dockerfile on the Debian stand-in.
bk_build_dockerfile_standin() {
  local name="$1" dir
  dir="$(bk_standin_dir "$name")"
  bk_log "$name: docker build deploy/standins/$(basename "$dir")"
  bk_docker build -q --label "$BK_STANDIN_RECIPE_LABEL=$(bk_standin_recipe "$name")" -t "$name" "$dir" \
    >"$BK_CT_STATE/standin-$(basename "$dir").log" 2>&1 \
    || { tail -20 "$BK_CT_STATE/standin-$(basename "$dir").log" >&2; bk_die "building the $name stand-in failed"; }
}

# Which local images are stand-ins (name and what they stand in for), one a line.
bk_standin_report() {
  local name label
  for name in $(bk_base_image_names); do
    label="$(bk_docker image inspect -f "{{ index .Config.Labels \"$BK_STANDIN_LABEL\" }}" "$name" 2>/dev/null || true)"
    [ -n "$label" ] && [ "$label" != "<no value>" ] && printf '%s: %s\n' "$name" "$label"
  done
  return 0
}

# The size of a local image in MB (10^6 bytes, as `docker images` counts).
bk_image_megabytes() { echo $(( $(bk_docker image inspect -f '{{ .Size }}' "$1") / 1000000 )); }
