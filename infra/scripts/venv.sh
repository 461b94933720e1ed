# Sourced by the scripts (not run): the project's Python virtualenv, where every Python
# tool lives (moto_server, cfn-lint, sam, cargo-lambda, and the pip that fetches the
# model). Nothing is installed into the user's own site-packages or ~/.local/bin.
#   SWITCHYARD_VENV   ${SWITCHYARD_CACHE_DIR:-${XDG_CACHE_HOME:-~/.cache}/switchyard}/venv
#                     (the cache root the index cache and the model use too)
# Sourcing puts $SWITCHYARD_VENV/bin first on PATH, for the sourcing script's process and
# what it runs (so `cargo lambda` finds cargo-lambda there); the caller's shell is not
# changed. An interactive shell may source it too: `. infra/scripts/venv.sh`.
# venv_ensure creates the virtualenv with `python3 -m venv` ($PYTHON overrides python3)
# when it is missing or broken.

SWITCHYARD_VENV="${SWITCHYARD_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/switchyard}/venv"
case ":$PATH:" in
  *":$SWITCHYARD_VENV/bin:"*) ;;
  *) export PATH="$SWITCHYARD_VENV/bin:$PATH" ;;
esac

# The virtualenv's interpreter runs and has pip.
venv_ok() {
  "$SWITCHYARD_VENV/bin/python" -m pip --version >/dev/null 2>&1
}

# Create the virtualenv unless it works already. Returns non-zero, saying why, on failure.
venv_ensure() {
  venv_ok && return 0
  local python="${PYTHON:-python3}"
  command -v "$python" >/dev/null 2>&1 || {
    echo "venv: $python not found; install Python 3 (3.9 or newer)" >&2
    return 1
  }
  # Only ever delete a folder that is a (broken) virtualenv.
  if [ -e "$SWITCHYARD_VENV" ] && [ ! -f "$SWITCHYARD_VENV/pyvenv.cfg" ]; then
    echo "venv: $SWITCHYARD_VENV exists and is not a virtualenv; move it away" >&2
    return 1
  fi
  echo "venv: creating $SWITCHYARD_VENV"
  rm -rf "$SWITCHYARD_VENV"
  mkdir -p "$(dirname "$SWITCHYARD_VENV")"
  local out
  if ! out=$("$python" -m venv "$SWITCHYARD_VENV" 2>&1) || ! venv_ok; then
    rm -rf "$SWITCHYARD_VENV"
    # Without the venv module (or its ensurepip), the virtualenv package does the same.
    if "$python" -m virtualenv --version >/dev/null 2>&1 &&
      "$python" -m virtualenv --quiet "$SWITCHYARD_VENV" && venv_ok; then
      echo "venv: created with virtualenv ($python has no working venv module)"
      return 0
    fi
    rm -rf "$SWITCHYARD_VENV"
    [ -z "$out" ] || echo "$out" | tail -n 5 >&2
    echo "venv: \`$python -m venv $SWITCHYARD_VENV\` failed: $python has no working venv module" >&2
    echo "venv: (with pip). Install it (Debian/Ubuntu: apt-get install python3-venv) or set" >&2
    echo "venv: PYTHON to an interpreter that has it, then run this again." >&2
    return 1
  fi
}
