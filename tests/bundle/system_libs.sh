# shellcheck shell=bash
# The libraries the GPU bundle does not ship, in one place for scripts/gpu-bundle.sh (which leaves
# them out of lib/) and tests/bundle/check_bundle.sh (which checks they come from the machine).
#   . tests/bundle/system_libs.sh
#   BUNDLE_SYSTEM_LIBS   every Linux with a C++ runtime and an NVIDIA driver has them, and they must
#                        not be replaced by older copies (glibc is loaded by the machine's own
#                        ld.so; libstdc++ there is newer than Debian 12's); programs link them
#   BUNDLE_RUNTIME_LIBS  the GPU machine's own, loaded at run time (NCCL: GPULAUNCH_NCCL_LIB, e.g.
#                        PyTorch's nvidia-nccl wheel); no program may link them
#   bundle_lib_re NAME...  an ERE for ldd's first column: the soname of one of NAME...

# shellcheck disable=SC2034 # used by the scripts that source this file
BUNDLE_SYSTEM_LIBS=(linux-vdso ld-linux libc libm libdl libpthread librt libresolv libutil libstdc++ libgcc_s
  libcuda libnvidia-ml)
# shellcheck disable=SC2034
BUNDLE_RUNTIME_LIBS=(libnccl)

bundle_lib_re() {
  local n re=""
  for n; do re+="${re:+|}${n//+/[+]}"; done
  printf '^(%s)\\.so' "$re"
}
