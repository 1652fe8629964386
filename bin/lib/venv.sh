# Sourced by bin/run and bin/test: create .venv with Python >= 3.11 and install a requirements file
# when it (or any requirements*.txt) changed since the last install.

ensure_venv() {
  local requirements=$1
  local python=${PYTHON:-python3}
  if [ -d .venv ] && [ ! -x .venv/bin/pip ]; then
    rm -rf .venv  # left half-made by an earlier failed attempt
  fi
  if [ ! -x .venv/bin/python ]; then
    if ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
      echo "auditapp needs Python 3.11 or newer as '$python' (set PYTHON=/path/to/python3.11)." >&2
      exit 1
    fi
    if ! "$python" -m venv .venv 2>/dev/null; then
      rm -rf .venv
      if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        echo "Installing Debian's python3-venv ..."
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null
        "$python" -m venv .venv
      else
        echo "Cannot create a virtual environment: install venv support (Debian: sudo apt-get install python3-venv)." >&2
        exit 1
      fi
    fi
  fi
  local stamp
  local name
  name=$(basename "$requirements")
  stamp=".venv/.installed-$name-$(cat requirements*.txt | sha256sum | cut -c1-16)"
  if [ ! -f "$stamp" ]; then
    echo "Installing Python packages from $requirements into .venv ..."
    .venv/bin/python -m pip install --quiet --upgrade pip
    .venv/bin/python -m pip install --quiet -r "$requirements"
    .venv/bin/python -m pip install --quiet --no-deps -r requirements-nodeps.txt
    rm -f ".venv/.installed-$name-"*
    touch "$stamp"
  fi
}
