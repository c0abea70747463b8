/* Lists the GPU code embedded in an object, archive or executable (the CUDA fat binaries nvcc puts
 * in .nv_fatbin) and checks that SASS for the required architectures is there; a stand-in for
 * `cuobjdump --list-elf` that needs no CUDA driver or extra tool.
 *
 * usage: fatbin_list FILE [sm_80,sm_90]   exit 0 when every listed sm_XX has an ELF (SASS) image */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A fat binary: header {u32 magic 0xBA55ED50, u16 version, u16 header size, u64 size of the
 * entries}, then entries {u16 kind (1 PTX, 2 ELF), u16 version, u32 header size, u64 payload size,
 * ..., u32 arch at byte 28 (80 for sm_80)} each followed by its payload. ELF payloads are cubins
 * (e_machine 190, EM_CUDA) whose e_flags repeat the arch, which we cross-check. */
#define FATBIN_MAGIC 0xBA55ED50u

static uint16_t rd16(const unsigned char *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t rd32(const unsigned char *p) { return (uint32_t)rd16(p) | (uint32_t)rd16(p + 2) << 16; }
static uint64_t rd64(const unsigned char *p) { return (uint64_t)rd32(p) | (uint64_t)rd32(p + 4) << 32; }

/* arch from a cubin's ELF header, or 0 when it is not one */
static unsigned cubin_arch(const unsigned char *p, uint64_t len) {
  if (len < 64 || memcmp(p, "\x7f" "ELF", 4) != 0 || rd16(p + 18) != 190) return 0;
  uint32_t flags = rd32(p + 48);
  unsigned abiver = p[8];
  /* newer CUDA ELF ABI (version >= 7) moved the SM number to bits 8..15 */
  return abiver >= 7 ? (flags >> 8) & 0xff : flags & 0xff;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s FILE [sm_80,sm_90]\n", argv[0]);
    return 2;
  }
  FILE *f = fopen(argv[1], "rb");
  if (!f) {
    perror(argv[1]);
    return 2;
  }
  fseek(f, 0, SEEK_END);
  long sz = ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *d = malloc((size_t)sz + 1);
  if (!d || fread(d, 1, (size_t)sz, f) != (size_t)sz) {
    fprintf(stderr, "%s: cannot read\n", argv[1]);
    return 2;
  }
  fclose(f);

  unsigned sass[256] = {0}, ptx[256] = {0};
  int fatbins = 0, bad = 0;
  for (long i = 0; i + 16 <= sz; i++) {
    if (rd32(d + i) != FATBIN_MAGIC) continue;
    uint16_t hsize = rd16(d + i + 6);
    uint64_t fsize = rd64(d + i + 8);
    if (hsize < 16 || (uint64_t)i + hsize + fsize > (uint64_t)sz) continue;
    fatbins++;
    uint64_t o = (uint64_t)i + hsize, end = o + fsize;
    while (o + 32 <= end) {
      const unsigned char *e = d + o;
      uint16_t kind = rd16(e);
      uint32_t ehs = rd32(e + 4);
      uint64_t psize = rd64(e + 8);
      uint32_t arch = rd32(e + 28);
      if (ehs < 32 || o + ehs + psize > end) break;
      if (kind == 2) {
        unsigned carch = cubin_arch(e + ehs, psize);
        printf("ELF  sm_%u  %llu bytes%s\n", arch, (unsigned long long)psize,
               carch == 0 ? " (compressed or not a cubin)" : "");
        if (carch != 0 && carch != arch) {
          printf("  mismatch: cubin header says sm_%u\n", carch);
          bad = 1;
        }
        if (arch < 256) sass[arch]++;
      } else if (kind == 1) {
        printf("PTX  compute_%u  %llu bytes\n", arch, (unsigned long long)psize);
        if (arch < 256) ptx[arch]++;
      }
      o += ehs + psize;
    }
    i = (long)end - 1;
  }
  printf("%d fat binar%s in %s\n", fatbins, fatbins == 1 ? "y" : "ies", argv[1]);
  if (argc > 2) {
    char *want = strdup(argv[2]);
    for (char *tok = strtok(want, ","); tok; tok = strtok(NULL, ",")) {
      unsigned a = (unsigned)strtoul(tok + (strncmp(tok, "sm_", 3) == 0 ? 3 : 0), NULL, 10);
      if (a == 0 || a >= 256 || sass[a] == 0) {
        printf("MISSING: no SASS for %s\n", tok);
        bad = 1;
      } else {
        printf("ok: %u kernel image(s) for %s\n", sass[a], tok);
      }
    }
    free(want);
  }
  free(d);
  (void)ptx;
  return bad;
}
