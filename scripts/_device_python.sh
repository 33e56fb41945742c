# Sourced by the device scripts: PY = the first Python (the device's torch venv, then python3) that
# imports every module of NEEDS (default: numpy pytest torch cupy), or python3.
PY=python3
for p in /opt/torch/.venv/bin/python3 python3; do
  if $p -c "import $(echo ${NEEDS:-numpy pytest torch cupy} | tr ' ' ',')" 2>/dev/null; then PY=$p; break; fi
done
