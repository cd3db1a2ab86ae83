/*
 * A QEMU TCG plugin (QEMU 7.2's plugin API, version 1) that charges every instruction a
 * firmware image executes the cycles it takes on a modelled Cortex-M core and its part's memory:
 * what `tlsbench` projects milliseconds from (cycles.py beside it builds and runs it; the model's
 * timings and their sources are in docs/embedded.md, "The cycle model").
 *
 * Each translated instruction is decoded once (capstone, Thumb-2 with the M-profile), classified
 * and given its zero-wait-state cost from the core's Technical Reference Manual; at run time the
 * cost is completed with what only the run shows: whether a branch was taken (the next
 * instruction's address), how many registers an LDM/STM/PUSH/POP moved and where every access
 * went (memory callbacks), the instruction before it (load pipelining, address-generation
 * stalls, IT folding) and the instruction fetch through the part's flash (wait states, the read
 * width, the prefetch of the next line, the accelerator's instruction cache) and data reads from
 * flash (wait states, the accelerator's data cache). QEMU 7.2's plugin API reads no register, so
 * the operand-dependent timings (the Cortex-M3's long multiplies, SDIV/UDIV everywhere) are
 * charged at their fewest cycles and their range is reported apart (`span`): the model's figure
 * is bounded, the bound stated.
 *
 * Arguments (-plugin cycles.so,arg=...):
 *   out=PATH        where the counts are written when QEMU exits
 *   core=NAME       m0, m0plus, m3, m4, m33, m7
 *   window=ADDR     a store to this address opens a measurement window, the next closes it
 *                   (firmware_core.c's `current`, which MEASURED sets around every measured call)
 *   flash=LO-HI     guest addresses [LO, HI) that the part holds in flash (repeatable); every
 *                   other address is zero-wait-state memory (SRAM, TCM, the core's registers)
 *   ws=N            flash wait states at the part's clock
 *   line=BYTES      bytes one flash read delivers (the flash interface's width)
 *   prefetch=0|1    the next line is read while the current one executes
 *   icache=N:W      the flash accelerator's instruction cache: N lines of `line` bytes, W ways (0:0
 *                   none); every line read from flash for execution is kept
 *   dcache=N:W      its cache for data read from flash (literal pools, constant tables)
 *   muls=1|32       cycles of MULS (ARMv6-M: the implementation's multiplier)
 *   trace=PATH      every instruction charged inside a window: window, address, kind, memory
 *                   accesses, cycles, taken (for debugging the model)
 * Output lines:
 *   windows N
 *   window INDEX INSTRUCTIONS CYCLES FETCH_STALL DATA_WAIT SPAN UNDECODED
 *   total  INSTRUCTIONS CYCLES FETCH_STALL DATA_WAIT SPAN UNDECODED   (the whole run)
 * CYCLES includes FETCH_STALL and DATA_WAIT; the operand-dependent instructions are in it at
 * their fewest cycles, and at most SPAN more.
 */
#include <capstone/capstone.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <qemu-plugin.h>

QEMU_PLUGIN_EXPORT int qemu_plugin_version = QEMU_PLUGIN_VERSION;

/* ---------------------------------------------------------------- the core */
enum core { M0, M0PLUS, M3, M4, M33, M7 };
static enum core core = M4;
static unsigned muls_cycles = 1;

enum kind {
  K_ALU,   /* data processing, moves, shifts, extends, bit fields, SIMD of the DSP extension */
  K_MUL,   /* MUL(S): 32 x 32 -> 32 */
  K_MLA,   /* MLA, MLS and the DSP extension's 32-bit multiply-accumulates */
  K_LMUL,  /* UMULL, SMULL: 32 x 32 -> 64 */
  K_LMLA,  /* UMLAL, SMLAL, UMAAL, SMLALxy, SMLALD...: 64-bit accumulate */
  K_DIV,   /* SDIV, UDIV */
  K_LOAD,  /* one register from memory (LDR, LDRB, LDRH, LDRSB, LDRSH, LDREX, VLDR) */
  K_STORE, /* one register to memory */
  K_LDRD,  /* LDRD, STRD */
  K_MULTI, /* LDM, STM, PUSH, POP, VLDM, VSTM, VPUSH, VPOP */
  K_BRANCH,
  K_TB, /* TBB, TBH */
  K_IT,
  K_NOP,
  K_BARRIER, /* DMB, DSB */
  K_ISB,
  K_SYS, /* MRS, MSR */
  K_CPS,
  K_FP,    /* floating point, 1 cycle */
  K_FPMAC, /* VMLA, VMLS, VFMA...: 3 cycles */
  K_FPDIV, /* VDIV, VSQRT: 14 cycles */
  K_TRAP,  /* SVC, BKPT, UDF: an exception (outside any measured window) */
};

typedef struct insn {
  uint32_t addr;
  uint8_t size;
  uint8_t kind;
  uint8_t conditional; /* may not execute (Bcc, CBZ, an instruction in an IT block) */
  uint8_t writes_pc;   /* a branch or any instruction that loads or computes the PC */
  uint8_t direct;      /* a branch to an immediate target (B, Bcc, BL, CBZ, CBNZ) */
  uint8_t store_imm;   /* STR with an immediate offset: always one cycle on ARMv7-M */
  uint8_t undecoded;   /* capstone could not decode it: charged as one data operation */
  uint16_t dst;        /* core registers written, r0..r15 */
  uint16_t addr_regs;  /* base and index registers of a load or store */
  uint16_t src;        /* core registers read */
  uint8_t reads_flags, writes_flags;
  uint8_t shifted;     /* a shifted register operand (read a stage early on the M7) */
  uint8_t slot0;       /* issues only in the M7's first slot (LLVM's M7Slot0Only, SIMD) */
  uint8_t narrow_load; /* a byte or halfword load (a cycle slower on the M7) */
  uint16_t index;      /* its place in its translated block */
} insn;

/* A translated block: its instructions, charged when the next block starts (QEMU runs a
 * block whole; under -icount it retranslates a shorter one rather than leave one half run). */
typedef struct {
  size_t n;
  insn *insns;
} block;
#define MAX_BLOCK 512 /* TCG's most instructions per block */

/* ---------------------------------------------------------------- the part's memory */
#define MAX_FLASH 8
static uint64_t flash_lo[MAX_FLASH], flash_hi[MAX_FLASH];
static int n_flash;
static unsigned ws, line = 4;
static int prefetch;

static int in_flash(uint64_t a) {
  for (int i = 0; i < n_flash; i++)
    if (a >= flash_lo[i] && a < flash_hi[i]) return 1;
  return 0;
}

/* A set-associative cache of flash lines, least recently used out: the accelerator's. */
typedef struct {
  unsigned sets, ways;
  uint64_t *tag; /* sets x ways; ~0: empty */
  uint64_t *used;
  uint64_t clock;
  uint64_t last; /* the line found last: looked up first (a loop's lines hit again and again) */
  unsigned last_slot;
} cache;
static cache icache, dcache;

static void cache_init(cache *c, unsigned lines, unsigned ways) {
  if (lines == 0 || ways == 0) return;
  c->ways = ways;
  c->sets = lines / ways ? lines / ways : 1;
  c->tag = malloc(sizeof *c->tag * c->sets * c->ways);
  c->used = calloc(c->sets * c->ways, sizeof *c->used);
  if (c->tag == NULL || c->used == NULL) abort();
  memset(c->tag, 0xff, sizeof *c->tag * c->sets * c->ways);
}

/* Whether `line_addr` is cached; a miss fills it. */
static int cache_access(cache *c, uint64_t line_addr) {
  if (c->tag == NULL) return 0;
  uint64_t index = line_addr / line;
  c->clock++;
  if (index == c->last && c->tag[c->last_slot] == index) {
    c->used[c->last_slot] = c->clock;
    return 1;
  }
  unsigned set = (unsigned)(index % c->sets);
  uint64_t *tag = c->tag + (size_t)set * c->ways, *used = c->used + (size_t)set * c->ways;
  unsigned victim = 0;
  c->last = index;
  for (unsigned w = 0; w < c->ways; w++) {
    if (tag[w] == index) {
      used[w] = c->clock;
      c->last_slot = set * c->ways + w;
      return 1;
    }
    if (used[w] < used[victim]) victim = w;
  }
  tag[victim] = index;
  used[victim] = c->clock;
  c->last_slot = set * c->ways + victim;
  return 0;
}

/* ---------------------------------------------------------------- the run's state */
static uint64_t now;              /* cycles since the start */
static uint64_t fetch_line = ~0u; /* the flash line the core executes from */
static uint64_t pf_line = ~0u, pf_ready;

typedef struct {
  uint64_t insns, cycles, fetch_stall, data_wait, span, undecoded;
} tally;
static tally total;
static tally *windows;
static size_t n_windows, cap_windows;
static int window_open;
static uint64_t window_addr;
static FILE *trace; /* trace=PATH: every charged instruction of a window, for the model's tests */

/* The block running now, not yet charged (its last instruction's cost needs the next one),
 * and what its instructions' memory accesses showed. */
static const block *running;
static struct {
  unsigned accesses, toggles;
  uint64_t data_wait, unaligned;
} seen[MAX_BLOCK];
/* The instruction charged before: load pipelining and address dependencies. */
static const insn *previous;
static unsigned previous_accesses;

static void charge(int window, uint64_t cycles, uint64_t fetch_stall, uint64_t data_wait,
                   uint64_t span, int insn_count, int undecoded) {
  tally *ts[2] = {&total, window >= 0 ? &windows[window] : NULL};
  for (int i = 0; i < 2; i++) {
    if (ts[i] == NULL) continue;
    ts[i]->insns += (uint64_t)insn_count;
    ts[i]->cycles += cycles;
    ts[i]->fetch_stall += fetch_stall;
    ts[i]->data_wait += data_wait;
    ts[i]->span += span;
    ts[i]->undecoded += (uint64_t)undecoded;
  }
}

/* ---------------------------------------------------------------- costs */
/* The pipeline refill of a taken branch, P (TRM "1 + P", P = 1 to 3 "depending on the alignment
 * and width of the target instruction, and whether the processor manages to speculate the
 * address early"): 1 for a direct branch, whose target the fetch unit speculates early, 2 for an
 * indirect one; one more when the target is a 32-bit instruction that is not word-aligned. */
static unsigned refill(const insn *branch, const insn *target) {
  unsigned p = branch->direct ? 1 : 2;
  if (target != NULL && target->size == 4 && (target->addr & 2)) p++;
  return p;
}

static int is_single_load(const insn *i, unsigned accesses) {
  return i != NULL && i->kind == K_LOAD && !i->writes_pc && accesses > 0;
}

static int is_data_processing(const insn *i) {
  return i != NULL && (i->kind == K_ALU || i->kind == K_MUL || i->kind == K_MLA ||
                       i->kind == K_LMUL || i->kind == K_LMLA || i->kind == K_DIV);
}

/* ARMv7-M (Cortex-M3, M4; the Cortex-M33 as LLVM models it, with the M4's timings):
 * Cortex-M3 TRM (DDI 0337) and Cortex-M4 TRM (100166) table 3-1, and their "Load/store
 * timings" notes. `taken`: the flow left the instruction for another place than the next one.
 * Returns the cycles at zero wait states (the operand-dependent ones at their fewest) and adds
 * their range to *span. */
static uint64_t cost_v7m(const insn *i, unsigned accesses, int taken, const insn *next,
                         uint64_t *span) {
  int m3 = core == M3;
  int executed_memory = accesses > 0;
  switch (i->kind) {
    case K_ALU:
    case K_MUL:
      return i->writes_pc ? (taken ? 1 + refill(i, next) : 1) : 1;
    case K_MLA:
      return m3 ? 2 : 1;
    case K_LMUL:
      if (m3) { /* UMULL, SMULL: 3 to 5 by the operands' magnitude (early termination) */
        *span += 2;
        return 3;
      }
      return 1;
    case K_LMLA:
      if (m3) { /* UMLAL, SMLAL: 4 to 7 */
        *span += 3;
        return 4;
      }
      return 1;
    case K_DIV: /* 2 to 12 by the operands (early termination) */
      *span += 10;
      return 2;
    case K_LOAD: {
      if (!executed_memory) return 1; /* its condition failed */
      uint64_t c = 2;
      /* "if the next instruction is an LDR or STR, and the destination of the first LDR is
       * not used to compute the address for the next instruction, then one cycle is removed" */
      if (is_single_load(previous, previous_accesses) && !(previous->dst & i->addr_regs)) c = 1;
      /* "Any load or store that generates an address dependent on the result of a preceding
       * data processing operation stalls the pipeline for an additional cycle" */
      if (is_data_processing(previous) && (previous->dst & i->addr_regs)) c++;
      if (i->writes_pc && taken) c = 2 + 3; /* LDR PC: "at least five cycles" */
      return c;
    }
    case K_STORE: {
      if (!executed_memory) return 1;
      uint64_t c = 2;
      if (i->store_imm)
        c = 1; /* "STR Rx,[Ry,#imm] is always one cycle" */
      else if (is_single_load(previous, previous_accesses) && !(previous->dst & i->addr_regs))
        c = 1; /* "STR can only be pipelined when it follows an LDR" */
      if (is_data_processing(previous) && (previous->dst & i->addr_regs)) c++;
      return c;
    }
    case K_LDRD: /* not pipelined with its neighbours; the second word with the first */
      return executed_memory ? 3 : 1;
    case K_MULTI: /* LDM, STM, PUSH, POP: 1 + N; with the PC, 1 + N + P */
      if (!executed_memory) return 1;
      return 1 + accesses + (i->writes_pc && taken ? refill(i, next) : 0);
    case K_BRANCH:
      return taken ? 1 + refill(i, next) : 1;
    case K_TB: /* "two cycles for the load, one cycle for the add, and three for the reload" */
      return 2 + 1 + 3;
    case K_IT: /* "can be folded onto a preceding 16-bit Thumb instruction" */
      return previous != NULL && previous->size == 2 && !previous->writes_pc ? 0 : 1;
    case K_ISB:
      return 1 + 2;
    case K_FPMAC:
      return 3;
    case K_FPDIV:
      return 14;
    default:
      return 1;
  }
}

/* Cortex-M7: an in-order, dual-issue pipeline as LLVM's ARMScheduleM7.td models it (Arm gives
 * no cycle table): two issue slots a cycle; two ALUs, two load ports, one store port, one MAC,
 * one branch unit and one shifter per cycle; LDM/STM/PUSH/POP, LDRD/STRD, divisions, table
 * branches and system instructions single-issue; CLZ, bit fields, extends and the DSP SIMD
 * instructions in the first slot only; results for the next instruction after 1 cycle (ALU,
 * word loads), 2 (byte and halfword loads, multiplies), 3 (floating point), address operands
 * and shifted ones read a stage early (one cycle more); a branch misprediction costs 4 cycles
 * (`MispredictPenalty`), predicted by 2-bit counters and a target cache of 256 entries; the
 * data of a store and a multiply-accumulate's accumulator are read a stage late.
 * Load and store multiples move two registers a cycle (the 64-bit data path). */
static uint64_t m7_ready[17]; /* the cycle a register (16: the flags) can be read in EX2 */
static int m7_open;           /* the group issued last cycle has a free slot */
static struct { unsigned alu, load, store, mac, branch, shift, fp; } m7_group;
static uint8_t m7_counter[256];
static uint32_t m7_target[256];

static int m7_pairs(const insn *i) {
  switch (i->kind) {
    case K_ALU:
      return m7_group.alu < 2 && (!i->shifted || m7_group.shift < 1);
    case K_MUL:
    case K_MLA:
    case K_LMUL:
    case K_LMLA:
      return m7_group.mac < 1;
    case K_LOAD:
      return m7_group.load < 2;
    case K_STORE:
      return m7_group.store < 1;
    case K_BRANCH:
      return m7_group.branch < 1;
    case K_FP:
    case K_FPMAC:
    case K_FPDIV:
      return m7_group.fp < 1;
    case K_IT:
    case K_NOP:
      return 1;
    default:
      return 0; /* single-issue */
  }
}

static void m7_take(const insn *i) {
  switch (i->kind) {
    case K_ALU:
      m7_group.alu++;
      m7_group.shift += i->shifted;
      break;
    case K_MUL:
    case K_MLA:
    case K_LMUL:
    case K_LMLA:
      m7_group.mac++;
      break;
    case K_LOAD:
      m7_group.load++;
      break;
    case K_STORE:
      m7_group.store++;
      break;
    case K_BRANCH:
      m7_group.branch++;
      break;
    case K_FP:
    case K_FPMAC:
    case K_FPDIV:
      m7_group.fp++;
      break;
    default:
      break;
  }
}

/* Cycles a single-issue instruction holds both slots. */
static uint64_t m7_occupies(const insn *i, unsigned accesses, uint64_t *span) {
  switch (i->kind) {
    case K_MULTI:
      return 1 + (accesses + 1) / 2;
    case K_LDRD:
      return 2;
    case K_DIV:
      *span += 10;
      return 2;
    case K_TB:
      return 2;
    case K_SYS:
    case K_BARRIER:
    case K_ISB:
      return 3;
    default:
      return 1;
  }
}

static unsigned m7_latency(const insn *i) {
  switch (i->kind) {
    case K_LOAD:
      return i->narrow_load ? 2 : 1;
    case K_MULTI:
    case K_LDRD:
      return 1;
    case K_MUL:
    case K_MLA:
    case K_LMUL:
    case K_LMLA:
      return 2;
    case K_FP:
    case K_FPMAC:
    case K_FPDIV:
      return 3;
    default:
      return 1;
  }
}

/* Whether the branch predictor got `i` right (and what it learns). */
static int m7_predicted(const insn *i, int taken, const insn *next) {
  unsigned index = (i->addr >> 1) & 255;
  if (!i->writes_pc) return 1;
  if (i->direct && !i->conditional) return 1;
  if (!i->direct) { /* an indirect branch: the target cache */
    uint32_t target = next != NULL ? next->addr : 0;
    int right = taken && m7_target[index] == target;
    if (taken) m7_target[index] = target;
    return right;
  }
  int right = (m7_counter[index] >= 2) == taken;
  if (taken && m7_counter[index] < 3) m7_counter[index]++;
  if (!taken && m7_counter[index] > 0) m7_counter[index]--;
  return right;
}

static uint64_t cost_m7(const insn *i, unsigned accesses, int taken, const insn *next,
                        uint64_t *span) {
  uint64_t need = 0;
  int stores = i->kind == K_STORE || (i->kind == K_LDRD && !i->dst);
  for (int r = 0; r < 16; r++) {
    if (!((i->src >> r) & 1)) continue;
    uint64_t ready = m7_ready[r];
    if (((i->addr_regs >> r) & 1) || i->shifted)
      ready++; /* read in EX1: M7Read_ISS */
    else if (stores && ready > 0)
      ready--; /* the data of a store is read in EX3: M7Read_EX2 */
    else if ((i->kind == K_MLA || i->kind == K_LMLA) && ((i->dst >> r) & 1) && ready > 0)
      ready--; /* the accumulator is read a stage late: ReadMAC */
    if (ready > need) need = ready;
  }
  if (i->reads_flags && m7_ready[16] > need) need = m7_ready[16];
  uint64_t issue, added;
  int single = i->kind == K_MULTI || i->kind == K_LDRD || i->kind == K_DIV || i->kind == K_TB ||
               i->kind == K_SYS || i->kind == K_BARRIER || i->kind == K_ISB || i->kind == K_CPS ||
               i->kind == K_TRAP;
  if (m7_open && now > 0 && !single && !i->slot0 && need <= now - 1 && m7_pairs(i)) {
    issue = now - 1;
    m7_take(i);
    m7_open = 0;
    added = 0;
  } else {
    issue = need > now ? need : now;
    memset(&m7_group, 0, sizeof m7_group);
    uint64_t occupy = single ? m7_occupies(i, accesses, span) : 1;
    m7_take(i);
    m7_open = !single;
    added = issue + occupy - now;
  }
  for (int r = 0; r < 15; r++)
    if ((i->dst >> r) & 1) m7_ready[r] = issue + m7_latency(i);
  if (i->writes_flags) m7_ready[16] = issue + 1;
  if (i->writes_pc && (taken || i->conditional)) {
    if (taken) m7_open = 0; /* the group ends at a taken branch */
    if (!m7_predicted(i, taken, next)) {
      added += 4;
      m7_open = 0;
    }
  }
  return added;
}

/* ARMv6-M: Cortex-M0 TRM (DDI 0432C) and Cortex-M0+ TRM (DDI 0484C) table 3-1. */
static uint64_t cost_v6m(const insn *i, unsigned accesses, int taken) {
  int plus = core == M0PLUS;
  unsigned redirect = plus ? 2 : 3; /* B, BX, MOV PC: 3 on the M0 (three stages), 2 on the M0+ */
  switch (i->kind) {
    case K_ALU:
      return i->writes_pc && taken ? redirect : 1;
    case K_MUL:
      return muls_cycles;
    case K_LOAD:
    case K_STORE:
      return 2;
    case K_MULTI: /* 1 + N; POP with the PC: 4 + N (M0), 3 + N (M0+) */
      return 1 + accesses + (i->writes_pc && taken ? (plus ? 2 : 3) : 0);
    case K_BRANCH:
      if (!taken) return 1;
      /* BL: 4 (M0), 3 (M0+); B, Bcc taken, BX, BLX: 3 (M0), 2 (M0+) */
      return (i->dst & (1u << 14)) && i->direct ? redirect + 1 : redirect;
    case K_BARRIER:
    case K_ISB:
    case K_SYS:
      return plus ? 3 : 4;
    default:
      return 1;
  }
}

/* Wait states of a flash access for execution at `a` (a line the core does not hold). */
static uint64_t fetch(uint32_t a, unsigned size) {
  uint64_t stall = 0;
  uint64_t first = a & ~(uint64_t)(line - 1), last = (a + size - 1) & ~(uint64_t)(line - 1);
  for (uint64_t l = first;; l += line) {
    if (l != fetch_line) {
      uint64_t ready = now + stall;
      if (!in_flash(l)) {
        /* zero wait states */
      } else if (cache_access(&icache, l)) {
        /* a hit in the accelerator */
      } else if (prefetch && l == pf_line) {
        if (pf_ready > ready) ready = pf_ready;
      } else {
        ready += ws; /* a read of 1 + ws cycles where zero wait states take 1 */
      }
      stall = ready - now;
      fetch_line = l;
      if (prefetch && in_flash(l + line)) {
        pf_line = l + line;
        pf_ready = ready + 1 + ws;
      }
    }
    if (l == last) break;
  }
  return stall;
}

static void toggle_window(void) {
  if (window_open) {
    window_open = 0;
    return;
  }
  if (n_windows == cap_windows) {
    cap_windows = cap_windows ? 2 * cap_windows : 64;
    windows = realloc(windows, cap_windows * sizeof *windows);
    if (windows == NULL) abort();
  }
  memset(&windows[n_windows++], 0, sizeof *windows);
  window_open = 1;
}

/* Charges instruction `k` of the running block: the wait for its fetch, then its cycles, now
 * that the next instruction (`next`, NULL at the end) is known. */
static void charge_insn(const insn *i, unsigned k, const insn *next) {
  int window = window_open ? (int)n_windows - 1 : -1;
  uint64_t stall = fetch(i->addr, i->size);
  now += stall;
  if (stall) m7_open = 0; /* the front end waited: nothing pairs across it */
  unsigned accesses = seen[k].accesses;
  uint64_t waits = seen[k].data_wait + seen[k].unaligned;
  int taken = next != NULL && next->addr != i->addr + i->size;
  uint64_t span = 0, cycles;
  if (core == M0 || core == M0PLUS)
    cycles = cost_v6m(i, accesses, taken);
  else if (core == M7)
    cycles = cost_m7(i, accesses, taken, next, &span);
  else
    cycles = cost_v7m(i, accesses, taken, next, &span);
  if (taken && !i->writes_pc && i->kind != K_TRAP)
    cycles += core == M0 ? 16 : core == M0PLUS ? 15 : 12; /* an exception's entry */
  cycles += waits;
  if (core == M7 && waits) m7_open = 0; /* a stall */
  if (trace != NULL && window >= 0)
    fprintf(trace, "%d %08x %u %u %u %" PRIu64 " %d %08x\n", window, i->addr, i->size, i->kind,
            accesses, stall + cycles, taken, next ? next->addr : 0);
  now += cycles;
  charge(window, stall + cycles, stall, seen[k].data_wait, span, 1, i->undecoded);
  previous = i;
  previous_accesses = accesses;
  for (unsigned t = 0; t < seen[k].toggles; t++) toggle_window();
}

/* Charges the running block, now that the next one's first instruction is known. */
static void settle(const insn *next) {
  if (running == NULL) return;
  for (size_t k = 0; k < running->n; k++)
    charge_insn(&running->insns[k], (unsigned)k,
                k + 1 < running->n ? &running->insns[k + 1] : next);
  running = NULL;
}

static void on_block(unsigned int vcpu, void *udata) {
  const block *b = udata;
  (void)vcpu;
  settle(b->n ? &b->insns[0] : NULL);
  running = b;
  memset(seen, 0, b->n * sizeof seen[0]);
}

static void on_memory(unsigned int vcpu, qemu_plugin_meminfo_t info, uint64_t vaddr, void *udata) {
  const insn *i = udata;
  (void)vcpu;
  int store = qemu_plugin_mem_is_store(info);
  unsigned bytes = 1u << qemu_plugin_mem_size_shift(info);
  unsigned k = i->index;
  seen[k].accesses++;
  if (store && vaddr == window_addr) seen[k].toggles++;
  /* Unaligned accesses on ARMv7-M: a halfword at an odd address or a word at a halfword one
   * takes one more cycle, a word at an odd address two (TRM, "Load/store timings"). */
  if (bytes > 1 && (vaddr & (bytes - 1)) && core != M0 && core != M0PLUS)
    seen[k].unaligned += (bytes == 4 && (vaddr & 1)) ? 2 : 1;
  if (!store && in_flash(vaddr) && !cache_access(&dcache, vaddr & ~(uint64_t)(line - 1)))
    seen[k].data_wait += ws;
}

/* ---------------------------------------------------------------- decoding */
static csh cs;

static int reg_number(int reg) {
  if (reg >= ARM_REG_R0 && reg <= ARM_REG_R12) return reg - ARM_REG_R0;
  if (reg == ARM_REG_SP) return 13;
  if (reg == ARM_REG_LR) return 14;
  if (reg == ARM_REG_PC) return 15;
  return -1;
}

static void classify(insn *out, const cs_insn *d) {
  const cs_arm *arm = &d->detail->arm;
  cs_regs read, written;
  uint8_t n_read = 0, n_written = 0;
  unsigned id = d->id;
  out->conditional = arm->cc != ARM_CC_AL && arm->cc != ARM_CC_INVALID;
  if (cs_regs_access(cs, d, read, &n_read, written, &n_written) == CS_ERR_OK) {
    for (int k = 0; k < n_written; k++) {
      int r = reg_number(written[k]);
      if (r >= 0) out->dst |= (uint16_t)(1u << r);
      if (written[k] == ARM_REG_CPSR) out->writes_flags = 1;
    }
    for (int k = 0; k < n_read; k++) {
      int r = reg_number(read[k]);
      if (r >= 0) out->src |= (uint16_t)(1u << r);
      if (read[k] == ARM_REG_CPSR) out->reads_flags = 1;
    }
  }
  if (arm->update_flags) out->writes_flags = 1;
  if (out->conditional) out->reads_flags = 1;
  for (int k = 0; k < arm->op_count; k++) {
    const cs_arm_op *op = &arm->operands[k];
    if (op->type == ARM_OP_MEM) {
      int b = reg_number(op->mem.base), x = reg_number(op->mem.index);
      if (b >= 0) out->addr_regs |= (uint16_t)(1u << b);
      if (x >= 0) out->addr_regs |= (uint16_t)(1u << x);
      if (x < 0) out->store_imm = 1;
    }
    if (op->type == ARM_OP_REG && reg_number(op->reg) == 15 && (op->access & CS_AC_WRITE))
      out->dst |= 1u << 15;
    if (op->type == ARM_OP_REG && op->shift.type != ARM_SFT_INVALID && op->shift.value)
      out->shifted = 1;
  }
  out->writes_pc = (out->dst >> 15) & 1;
  out->kind = K_ALU;
  switch (id) {
    case ARM_INS_MUL:
      out->kind = K_MUL;
      break;
    case ARM_INS_MLA:
    case ARM_INS_MLS:
    case ARM_INS_SMLABB:
    case ARM_INS_SMLABT:
    case ARM_INS_SMLATB:
    case ARM_INS_SMLATT:
    case ARM_INS_SMLAWB:
    case ARM_INS_SMLAWT:
    case ARM_INS_SMLAD:
    case ARM_INS_SMLADX:
    case ARM_INS_SMLSD:
    case ARM_INS_SMLSDX:
    case ARM_INS_SMMLA:
    case ARM_INS_SMMLAR:
    case ARM_INS_SMMLS:
    case ARM_INS_SMMLSR:
    case ARM_INS_USADA8:
      out->kind = K_MLA;
      break;
    case ARM_INS_UMULL:
    case ARM_INS_SMULL:
      out->kind = K_LMUL;
      break;
    case ARM_INS_UMLAL:
    case ARM_INS_SMLAL:
    case ARM_INS_UMAAL:
    case ARM_INS_SMLALBB:
    case ARM_INS_SMLALBT:
    case ARM_INS_SMLALTB:
    case ARM_INS_SMLALTT:
    case ARM_INS_SMLALD:
    case ARM_INS_SMLALDX:
    case ARM_INS_SMLSLD:
    case ARM_INS_SMLSLDX:
      out->kind = K_LMLA;
      break;
    case ARM_INS_SDIV:
    case ARM_INS_UDIV:
      out->kind = K_DIV;
      break;
    case ARM_INS_LDR:
    case ARM_INS_LDRB:
    case ARM_INS_LDRH:
    case ARM_INS_LDRSB:
    case ARM_INS_LDRSH:
    case ARM_INS_LDRT:
    case ARM_INS_LDRBT:
    case ARM_INS_LDRHT:
    case ARM_INS_LDRSBT:
    case ARM_INS_LDRSHT:
    case ARM_INS_LDREX:
    case ARM_INS_LDREXB:
    case ARM_INS_LDREXH:
    case ARM_INS_LDA:
    case ARM_INS_LDAB:
    case ARM_INS_LDAH:
    case ARM_INS_LDAEX:
    case ARM_INS_LDAEXB:
    case ARM_INS_LDAEXH:
    case ARM_INS_VLDR:
    case ARM_INS_PLD:
    case ARM_INS_PLI:
      out->kind = K_LOAD;
      break;
    case ARM_INS_STR:
    case ARM_INS_STRB:
    case ARM_INS_STRH:
    case ARM_INS_STRT:
    case ARM_INS_STRBT:
    case ARM_INS_STRHT:
    case ARM_INS_STREX:
    case ARM_INS_STREXB:
    case ARM_INS_STREXH:
    case ARM_INS_STL:
    case ARM_INS_STLB:
    case ARM_INS_STLH:
    case ARM_INS_STLEX:
    case ARM_INS_STLEXB:
    case ARM_INS_STLEXH:
    case ARM_INS_VSTR:
      out->kind = K_STORE;
      break;
    case ARM_INS_LDRD:
    case ARM_INS_STRD:
    case ARM_INS_LDREXD:
    case ARM_INS_STREXD:
      out->kind = K_LDRD;
      break;
    case ARM_INS_LDM:
    case ARM_INS_LDMDA:
    case ARM_INS_LDMDB:
    case ARM_INS_LDMIB:
    case ARM_INS_STM:
    case ARM_INS_STMDA:
    case ARM_INS_STMDB:
    case ARM_INS_STMIB:
    case ARM_INS_PUSH:
    case ARM_INS_POP:
    case ARM_INS_VLDMIA:
    case ARM_INS_VLDMDB:
    case ARM_INS_VSTMIA:
    case ARM_INS_VSTMDB:
    case ARM_INS_VPUSH:
    case ARM_INS_VPOP:
      out->kind = K_MULTI;
      break;
    case ARM_INS_B:
    case ARM_INS_BL:
    case ARM_INS_CBZ:
    case ARM_INS_CBNZ:
      out->kind = K_BRANCH;
      out->direct = 1;
      out->writes_pc = 1;
      break;
    case ARM_INS_BX:
    case ARM_INS_BLX:
      out->kind = K_BRANCH;
      out->writes_pc = 1;
      /* BLX <label> (an immediate) exists in ARM state only: in Thumb, BLX is indirect */
      break;
    case ARM_INS_TBB:
    case ARM_INS_TBH:
      out->kind = K_TB;
      out->writes_pc = 1;
      break;
    case ARM_INS_IT:
      out->kind = K_IT;
      break;
    case ARM_INS_NOP:
    case ARM_INS_YIELD:
    case ARM_INS_WFE:
    case ARM_INS_WFI:
    case ARM_INS_SEV:
      out->kind = K_NOP;
      break;
    case ARM_INS_DMB:
    case ARM_INS_DSB:
      out->kind = K_BARRIER;
      break;
    case ARM_INS_ISB:
      out->kind = K_ISB;
      break;
    case ARM_INS_MRS:
    case ARM_INS_MSR:
      out->kind = K_SYS;
      break;
    case ARM_INS_CPS:
      out->kind = K_CPS;
      break;
    case ARM_INS_SVC:
    case ARM_INS_BKPT:
    case ARM_INS_UDF:
      out->kind = K_TRAP;
      break;
    case ARM_INS_VMLA:
    case ARM_INS_VMLS:
    case ARM_INS_VNMLA:
    case ARM_INS_VNMLS:
    case ARM_INS_VFMA:
    case ARM_INS_VFMS:
    case ARM_INS_VFNMA:
    case ARM_INS_VFNMS:
      out->kind = K_FPMAC;
      break;
    case ARM_INS_VDIV:
    case ARM_INS_VSQRT:
      out->kind = K_FPDIV;
      break;
    default:
      if (d->mnemonic[0] == 'v') out->kind = K_FP;
      break;
  }
  switch (id) {
    case ARM_INS_CLZ:
    case ARM_INS_BFC:
    case ARM_INS_BFI:
    case ARM_INS_SXTB:
    case ARM_INS_SXTH:
    case ARM_INS_UXTB:
    case ARM_INS_UXTH:
    case ARM_INS_SXTAB:
    case ARM_INS_SXTAH:
    case ARM_INS_UXTAB:
    case ARM_INS_UXTAH:
    case ARM_INS_REV:
    case ARM_INS_REV16:
    case ARM_INS_REVSH:
    case ARM_INS_RBIT:
    case ARM_INS_SBFX:
    case ARM_INS_UBFX:
    case ARM_INS_SSAT:
    case ARM_INS_USAT:
    case ARM_INS_PKHBT:
    case ARM_INS_PKHTB:
    case ARM_INS_SEL:
    case ARM_INS_UADD8:
    case ARM_INS_UADD16:
    case ARM_INS_USUB8:
    case ARM_INS_USUB16:
    case ARM_INS_SADD8:
    case ARM_INS_SADD16:
    case ARM_INS_SSUB8:
    case ARM_INS_SSUB16:
    case ARM_INS_QADD:
    case ARM_INS_QSUB:
    case ARM_INS_USAD8:
    case ARM_INS_LDREX:
    case ARM_INS_LDREXB:
    case ARM_INS_LDREXH:
      out->slot0 = 1;
      break;
    case ARM_INS_LDRB:
    case ARM_INS_LDRH:
    case ARM_INS_LDRSB:
    case ARM_INS_LDRSH:
      out->narrow_load = 1;
      break;
    default:
      break;
  }
  if (out->kind != K_STORE) out->store_imm = 0;
  /* A load's written registers include a base written back: only its destination matters to
   * the next load's address (writeback is forwarded). */
  if (out->kind == K_LOAD && arm->op_count > 0 && arm->operands[0].type == ARM_OP_REG) {
    int r = reg_number(arm->operands[0].reg);
    out->dst = r >= 0 ? (uint16_t)(1u << r) : 0;
    if (r == 15) out->writes_pc = 1;
  }
}

static void on_translate(qemu_plugin_id_t id, struct qemu_plugin_tb *tb) {
  (void)id;
  size_t n = qemu_plugin_tb_n_insns(tb);
  if (n > MAX_BLOCK) abort();
  /* Kept for the run: blocks are retranslated rarely. */
  block *b = calloc(1, sizeof *b);
  insn *insns = calloc(n ? n : 1, sizeof *insns);
  if (b == NULL || insns == NULL) abort();
  b->n = n;
  b->insns = insns;
  for (size_t k = 0; k < n; k++) {
    struct qemu_plugin_insn *qi = qemu_plugin_tb_get_insn(tb, k);
    insn *out = &insns[k];
    out->index = (uint16_t)k;
    out->addr = (uint32_t)qemu_plugin_insn_vaddr(qi);
    /* The size from the encoding: QEMU 7.2's Thumb translator peeks at the next halfword near
     * the end of a page (insn_crosses_page), and the peek is recorded as the instruction's. */
    const uint8_t *bytes = qemu_plugin_insn_data(qi);
    size_t have = qemu_plugin_insn_size(qi);
    unsigned top = have >= 2 ? bytes[1] >> 3 : 0;
    out->size = (uint8_t)(top == 0x1d || top == 0x1e || top == 0x1f ? 4 : 2);
    if (out->size > have) out->size = (uint8_t)have;
    cs_insn *d = NULL;
    if (cs_disasm(cs, bytes, out->size, out->addr, 1, &d) == 1) {
      classify(out, d);
    } else {
      out->undecoded = 1;
      out->kind = K_ALU;
    }
    if (d != NULL) cs_free(d, 1);
    qemu_plugin_register_vcpu_mem_cb(qi, on_memory, QEMU_PLUGIN_CB_NO_REGS, QEMU_PLUGIN_MEM_RW,
                                     out);
  }
  qemu_plugin_register_vcpu_tb_exec_cb(tb, on_block, QEMU_PLUGIN_CB_NO_REGS, b);
}

/* ---------------------------------------------------------------- the output */
static char out_path[4096];

static void print_tally(FILE *f, const tally *t) {
  fprintf(f, "%" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 "\n", t->insns,
          t->cycles, t->fetch_stall, t->data_wait, t->span, t->undecoded);
}

static void on_quit(qemu_plugin_id_t id, void *p) {
  (void)id;
  (void)p;
  settle(NULL);
  FILE *f = fopen(out_path, "w");
  if (f == NULL) return; /* the reader reports the missing file */
  fprintf(f, "windows %zu\n", n_windows);
  for (size_t w = 0; w < n_windows; w++) {
    fprintf(f, "window %zu ", w);
    print_tally(f, &windows[w]);
  }
  fprintf(f, "total ");
  print_tally(f, &total);
  fclose(f);
  if (trace != NULL) fclose(trace);
}

static int parse_pair(const char *text, unsigned *a, unsigned *b) {
  char *end;
  *a = (unsigned)strtoul(text, &end, 0);
  if (*end != ':') return -1;
  *b = (unsigned)strtoul(end + 1, &end, 0);
  return *end ? -1 : 0;
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc,
                                           char **argv) {
  static const char *const cores[] = {"m0", "m0plus", "m3", "m4", "m33", "m7"};
  unsigned ic_lines = 0, ic_ways = 0, dc_lines = 0, dc_ways = 0;
  int have_core = 0;
  (void)info;
  for (int i = 0; i < argc; i++) {
    const char *a = argv[i];
    char *end;
    if (strncmp(a, "out=", 4) == 0 && strlen(a + 4) < sizeof out_path) {
      strcpy(out_path, a + 4);
    } else if (strncmp(a, "core=", 5) == 0) {
      for (unsigned c = 0; c < sizeof cores / sizeof cores[0]; c++)
        if (strcmp(a + 5, cores[c]) == 0) {
          core = (enum core)c;
          have_core = 1;
        }
    } else if (strncmp(a, "window=", 7) == 0) {
      window_addr = strtoull(a + 7, NULL, 16);
    } else if (strncmp(a, "flash=", 6) == 0 && n_flash < MAX_FLASH) {
      flash_lo[n_flash] = strtoull(a + 6, &end, 16);
      if (*end != '-') goto bad;
      flash_hi[n_flash++] = strtoull(end + 1, NULL, 16);
    } else if (strncmp(a, "ws=", 3) == 0) {
      ws = (unsigned)strtoul(a + 3, NULL, 10);
    } else if (strncmp(a, "line=", 5) == 0) {
      line = (unsigned)strtoul(a + 5, NULL, 10);
      if (line == 0 || (line & (line - 1))) goto bad;
    } else if (strncmp(a, "prefetch=", 9) == 0) {
      prefetch = atoi(a + 9);
    } else if (strncmp(a, "icache=", 7) == 0) {
      if (parse_pair(a + 7, &ic_lines, &ic_ways)) goto bad;
    } else if (strncmp(a, "dcache=", 7) == 0) {
      if (parse_pair(a + 7, &dc_lines, &dc_ways)) goto bad;
    } else if (strncmp(a, "trace=", 6) == 0) {
      trace = fopen(a + 6, "w");
      if (trace == NULL) goto bad;
    } else if (strncmp(a, "muls=", 5) == 0) {
      muls_cycles = (unsigned)strtoul(a + 5, NULL, 10);
    } else {
    bad:
      fprintf(stderr, "cycles plugin: bad argument %s\n", a);
      return -1;
    }
  }
  if (!out_path[0] || !window_addr || !have_core) {
    fprintf(stderr, "cycles plugin: out=, window= and core= are required\n");
    return -1;
  }
  cache_init(&icache, ic_lines, ic_ways);
  cache_init(&dcache, dc_lines, dc_ways);
  if (cs_open(CS_ARCH_ARM, CS_MODE_THUMB | CS_MODE_MCLASS, &cs) != CS_ERR_OK) {
    fprintf(stderr, "cycles plugin: capstone has no Thumb decoder\n");
    return -1;
  }
  cs_option(cs, CS_OPT_DETAIL, CS_OPT_ON);
  qemu_plugin_register_vcpu_tb_trans_cb(id, on_translate);
  qemu_plugin_register_atexit_cb(id, on_quit, NULL);
  return 0;
}
