# Sourced by the GPU benches (bench/real_gpu_serving.sh, bench/real_gpu_prefix.sh) after the kit is unpacked: the
# Python of Triton's Python-backend stub, a venv of the image's python3 whose start-up hook is the kit's
# gpukit_boot.py (carried packages on sys.path; NumPy 1.26 in the stub only), configured as that hook documents.
# Needs PY (python3), W (the kit's work folder), R (the unpacked tree) and KIT; sets V (the venv) and LIBPYDIR (where
# libpython3.12 is: the system's, else the kit's copy). Returns 2 when the venv cannot be made.
stub_python() {
  V=$W/venv-serving
  if [ ! -x "$V/bin/python3" ]; then
    "$PY" -m venv --without-pip "$V" || return 2
    local site
    site=$("$V/bin/python3" -c 'import site; print(site.getsitepackages()[0])')
    cp "$KIT/gpukit_boot.py" "$site/"
    "$PY" -c 'import json, site, sys; json.dump({"dirs": [sys.argv[2] + "/site"] + site.getsitepackages(),
      "np1": sys.argv[2] + "/np1"}, open(sys.argv[1] + "/gpukit_boot.json", "w")); open(sys.argv[1] + "/gpukit.pth", "w").write("import gpukit_boot\n")' \
      "$site" "$R"
  fi
  LIBPYDIR=$("$PY" -c 'import sysconfig; print(sysconfig.get_config_var("LIBDIR") or "")')
  [ -e "$LIBPYDIR/libpython3.12.so.1.0" ] || LIBPYDIR=$R/pylib
}
