/* PMPI interposer: counts the payload bytes each rank sends to OTHER ranks, per MPI_Pcontrol
 * phase (elliptica's PcontrolPhase levels 1000..1007) and per MPI function. Load with
 * LD_PRELOAD; at MPI_Finalize each rank writes $ELLIPTICA_MPI_BYTES.<rank>.json (nothing if the
 * variable is unset). Conventions: see README.md. Not thread safe: plain globals, fine for
 * MPI_THREAD_SINGLE/FUNNELED/SERIALIZED (elliptica makes its MPI calls from one thread). */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

enum { NPH = 8 };
static const char* const phase_name[NPH] = {"other", "setup", "SORT", "GHOST-SOURCE",
                                            "GHOST-GRID", "FFT", "IFFT", "reduce"};
enum {
  F_SEND, F_ISEND, F_SSEND, F_RSEND, F_BSEND, F_ISSEND, F_SENDRECV, F_SENDRECV_REPLACE,
  F_ALLTOALL, F_ALLTOALLV, F_ALLTOALLW, F_IALLTOALL, F_IALLTOALLV, F_ALLGATHER, F_ALLGATHERV,
  F_GATHER, F_GATHERV, F_SCATTER, F_SCATTERV, F_BCAST, F_ALLREDUCE, F_REDUCE, NF
};
static const char* const fn_name[NF] = {
    "MPI_Send", "MPI_Isend", "MPI_Ssend", "MPI_Rsend", "MPI_Bsend", "MPI_Issend", "MPI_Sendrecv",
    "MPI_Sendrecv_replace", "MPI_Alltoall", "MPI_Alltoallv", "MPI_Alltoallw", "MPI_Ialltoall",
    "MPI_Ialltoallv", "MPI_Allgather", "MPI_Allgatherv", "MPI_Gather", "MPI_Gatherv",
    "MPI_Scatter", "MPI_Scatterv", "MPI_Bcast", "MPI_Allreduce", "MPI_Reduce"};
/* reductions' "semantic" bytes go to reduce_bytes, not to bytes (README) */
#define IS_REDUCTION(f) ((f) == F_ALLREDUCE || (f) == F_REDUCE)

static uint64_t g_bytes[NPH][NF], g_calls[NPH][NF];
static int g_phase = 0;

static void add(int f, uint64_t bytes) { g_bytes[g_phase][f] += bytes, g_calls[g_phase][f] += 1; }
static uint64_t tsize(MPI_Datatype t) {
  int s = 0;
  if (t != MPI_DATATYPE_NULL) PMPI_Type_size(t, &s);
  return s > 0 ? (uint64_t)s : 0;
}
static uint64_t nbytes(int count, MPI_Datatype t) { return count > 0 ? (uint64_t)count * tsize(t) : 0; }
static int is_inter(MPI_Comm c) { int f = 0; PMPI_Comm_test_inter(c, &f); return f; }
static int my_rank(MPI_Comm c) { int r = -1; PMPI_Comm_rank(c, &r); return r; }
/* ranks a collective's data goes to besides this one: the remote group for intercommunicators */
static int peers(MPI_Comm c) {
  int n = 0;
  if (is_inter(c)) {
    PMPI_Comm_remote_size(c, &n);
    return n;
  }
  PMPI_Comm_size(c, &n);
  return n - 1;
}
static int npeers_total(MPI_Comm c) { return is_inter(c) ? peers(c) : peers(c) + 1; }
/* point-to-point: nothing to self or to MPI_PROC_NULL */
static void p2p(int f, int count, MPI_Datatype t, int dest, MPI_Comm c) {
  uint64_t b = 0;
  if (dest != MPI_PROC_NULL && (is_inter(c) || dest != my_rank(c))) b = nbytes(count, t);
  add(f, b);
}

int MPI_Pcontrol(const int level, ...) {
  if (level >= 1000 && level <= 1007) g_phase = level - 1000;
  return PMPI_Pcontrol(level); /* chained: another profiler below still sees the call */
}

/* ---------------------------------------------------------------- point-to-point */
#define P2P(NAME, F)                                                         \
  int NAME(const void* b, int n, MPI_Datatype t, int d, int tag, MPI_Comm c) { \
    p2p(F, n, t, d, c);                                                       \
    return P##NAME(b, n, t, d, tag, c);                                       \
  }
#define IP2P(NAME, F)                                                                      \
  int NAME(const void* b, int n, MPI_Datatype t, int d, int tag, MPI_Comm c, MPI_Request* r) { \
    p2p(F, n, t, d, c);                                                                     \
    return P##NAME(b, n, t, d, tag, c, r);                                                  \
  }
P2P(MPI_Send, F_SEND)
P2P(MPI_Ssend, F_SSEND)
P2P(MPI_Rsend, F_RSEND)
P2P(MPI_Bsend, F_BSEND)
IP2P(MPI_Isend, F_ISEND)
IP2P(MPI_Issend, F_ISSEND)
int MPI_Sendrecv(const void* sb, int sn, MPI_Datatype st, int d, int stag, void* rb, int rn,
                 MPI_Datatype rt, int s, int rtag, MPI_Comm c, MPI_Status* status) {
  p2p(F_SENDRECV, sn, st, d, c);
  return PMPI_Sendrecv(sb, sn, st, d, stag, rb, rn, rt, s, rtag, c, status);
}
int MPI_Sendrecv_replace(void* b, int n, MPI_Datatype t, int d, int stag, int s, int rtag,
                         MPI_Comm c, MPI_Status* status) {
  p2p(F_SENDRECV_REPLACE, n, t, d, c);
  return PMPI_Sendrecv_replace(b, n, t, d, stag, s, rtag, c, status);
}

/* ---------------------------------------------------------------- all-to-all */
/* Alltoall: one block per rank, the own block excluded; IN_PLACE: the receive block */
static uint64_t a2a(const void* sb, int sn, MPI_Datatype st, int rn, MPI_Datatype rt, MPI_Comm c) {
  uint64_t blk = sb == MPI_IN_PLACE ? nbytes(rn, rt) : nbytes(sn, st);
  return blk * (uint64_t)peers(c);
}
/* Alltoallv/w: sum of the blocks to the other ranks; IN_PLACE: the receive side's counts/types */
static uint64_t a2av(const void* sb, const int* sn, MPI_Datatype st, const int* rn,
                     MPI_Datatype rt, MPI_Comm c) {
  const int inter = is_inter(c), me = inter ? -1 : my_rank(c), n = npeers_total(c);
  const int* cnt = sb == MPI_IN_PLACE ? rn : sn;
  const uint64_t s = tsize(sb == MPI_IN_PLACE ? rt : st);
  uint64_t b = 0;
  for (int i = 0; i < n; ++i)
    if (i != me && cnt[i] > 0) b += (uint64_t)cnt[i] * s;
  return b;
}
int MPI_Alltoall(const void* sb, int sn, MPI_Datatype st, void* rb, int rn, MPI_Datatype rt,
                 MPI_Comm c) {
  add(F_ALLTOALL, a2a(sb, sn, st, rn, rt, c));
  return PMPI_Alltoall(sb, sn, st, rb, rn, rt, c);
}
int MPI_Alltoallv(const void* sb, const int sn[], const int sd[], MPI_Datatype st, void* rb,
                  const int rn[], const int rd[], MPI_Datatype rt, MPI_Comm c) {
  add(F_ALLTOALLV, a2av(sb, sn, st, rn, rt, c));
  return PMPI_Alltoallv(sb, sn, sd, st, rb, rn, rd, rt, c);
}
int MPI_Alltoallw(const void* sb, const int sn[], const int sd[], const MPI_Datatype st[],
                  void* rb, const int rn[], const int rd[], const MPI_Datatype rt[], MPI_Comm c) {
  const int inter = is_inter(c), me = inter ? -1 : my_rank(c), n = npeers_total(c);
  const int inplace = sb == MPI_IN_PLACE;
  uint64_t b = 0;
  for (int i = 0; i < n; ++i)
    if (i != me) b += inplace ? nbytes(rn[i], rt[i]) : nbytes(sn[i], st[i]);
  add(F_ALLTOALLW, b);
  return PMPI_Alltoallw(sb, sn, sd, st, rb, rn, rd, rt, c);
}
int MPI_Ialltoall(const void* sb, int sn, MPI_Datatype st, void* rb, int rn, MPI_Datatype rt,
                  MPI_Comm c, MPI_Request* r) {
  add(F_IALLTOALL, a2a(sb, sn, st, rn, rt, c));
  return PMPI_Ialltoall(sb, sn, st, rb, rn, rt, c, r);
}
int MPI_Ialltoallv(const void* sb, const int sn[], const int sd[], MPI_Datatype st, void* rb,
                   const int rn[], const int rd[], MPI_Datatype rt, MPI_Comm c, MPI_Request* r) {
  add(F_IALLTOALLV, a2av(sb, sn, st, rn, rt, c));
  return PMPI_Ialltoallv(sb, sn, sd, st, rb, rn, rd, rt, c, r);
}

/* ---------------------------------------------------------------- gather / scatter / bcast */
/* Allgather(v): this rank's contribution reaches each of the other ranks */
int MPI_Allgather(const void* sb, int sn, MPI_Datatype st, void* rb, int rn, MPI_Datatype rt,
                  MPI_Comm c) {
  uint64_t blk = sb == MPI_IN_PLACE ? nbytes(rn, rt) : nbytes(sn, st);
  add(F_ALLGATHER, blk * (uint64_t)peers(c));
  return PMPI_Allgather(sb, sn, st, rb, rn, rt, c);
}
int MPI_Allgatherv(const void* sb, int sn, MPI_Datatype st, void* rb, const int rn[],
                   const int rd[], MPI_Datatype rt, MPI_Comm c) {
  uint64_t blk = sb == MPI_IN_PLACE ? nbytes(rn[my_rank(c)], rt) : nbytes(sn, st);
  add(F_ALLGATHERV, blk * (uint64_t)peers(c));
  return PMPI_Allgatherv(sb, sn, st, rb, rn, rd, rt, c);
}
/* rooted collectives; intercommunicators: root = MPI_ROOT in the sending group, MPI_PROC_NULL
 * for the idle ranks of that group, the root's rank in the other group */
static int is_root(int root, MPI_Comm c) { return is_inter(c) ? root == MPI_ROOT : root == my_rank(c); }
static int to_root(int root, MPI_Comm c) {
  return !is_root(root, c) && root != MPI_PROC_NULL && root != MPI_ROOT;
}
/* Gather(v): a non-root rank sends its block to the root; the root's own block stays */
int MPI_Gather(const void* sb, int sn, MPI_Datatype st, void* rb, int rn, MPI_Datatype rt,
               int root, MPI_Comm c) {
  add(F_GATHER, to_root(root, c) ? nbytes(sn, st) : 0);
  return PMPI_Gather(sb, sn, st, rb, rn, rt, root, c);
}
int MPI_Gatherv(const void* sb, int sn, MPI_Datatype st, void* rb, const int rn[],
                const int rd[], MPI_Datatype rt, int root, MPI_Comm c) {
  add(F_GATHERV, to_root(root, c) ? nbytes(sn, st) : 0);
  return PMPI_Gatherv(sb, sn, st, rb, rn, rd, rt, root, c);
}
/* Scatter(v): the root sends every other rank its block; the others send nothing */
int MPI_Scatter(const void* sb, int sn, MPI_Datatype st, void* rb, int rn, MPI_Datatype rt,
                int root, MPI_Comm c) {
  add(F_SCATTER, is_root(root, c) ? nbytes(sn, st) * (uint64_t)peers(c) : 0);
  return PMPI_Scatter(sb, sn, st, rb, rn, rt, root, c);
}
int MPI_Scatterv(const void* sb, const int sn[], const int sd[], MPI_Datatype st, void* rb,
                 int rn, MPI_Datatype rt, int root, MPI_Comm c) {
  uint64_t b = 0;
  if (is_root(root, c)) {
    const int me = is_inter(c) ? -1 : my_rank(c), n = npeers_total(c);
    for (int i = 0; i < n; ++i)
      if (i != me) b += nbytes(sn[i], st);
  }
  add(F_SCATTERV, b);
  return PMPI_Scatterv(sb, sn, sd, st, rb, rn, rt, root, c);
}
/* Bcast: the root counts count x size x (ranks - 1), the others 0 (whatever the tree does) */
int MPI_Bcast(void* b, int n, MPI_Datatype t, int root, MPI_Comm c) {
  add(F_BCAST, is_root(root, c) ? nbytes(n, t) * (uint64_t)peers(c) : 0);
  return PMPI_Bcast(b, n, t, root, c);
}

/* ---------------------------------------------------------------- reductions (reduce_bytes) */
/* Allreduce: each rank's vector leaves it once, count x size when there are other ranks */
int MPI_Allreduce(const void* sb, void* rb, int n, MPI_Datatype t, MPI_Op op, MPI_Comm c) {
  add(F_ALLREDUCE, peers(c) > 0 ? nbytes(n, t) : 0);
  return PMPI_Allreduce(sb, rb, n, t, op, c);
}
/* Reduce: a non-root rank sends its vector to the root once; the root 0 */
int MPI_Reduce(const void* sb, void* rb, int n, MPI_Datatype t, MPI_Op op, int root, MPI_Comm c) {
  add(F_REDUCE, to_root(root, c) ? nbytes(n, t) : 0);
  return PMPI_Reduce(sb, rb, n, t, op, root, c);
}

/* ---------------------------------------------------------------- output */
static void write_fns(FILE* f, const uint64_t* b, const uint64_t* n) {
  int first = 1;
  fputc('{', f);
  for (int i = 0; i < NF; ++i) {
    if (!n[i]) continue;
    fprintf(f, "%s\"%s\":{\"bytes\":%llu,\"calls\":%llu}", first ? "" : ",", fn_name[i],
            (unsigned long long)b[i], (unsigned long long)n[i]);
    first = 0;
  }
  fputc('}', f);
}
static void write_json(void) {
  const char* prefix = getenv("ELLIPTICA_MPI_BYTES");
  int rank = 0, size = 1;
  if (!prefix || !*prefix) return;
  PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
  PMPI_Comm_size(MPI_COMM_WORLD, &size);
  char path[4096];
  snprintf(path, sizeof path, "%s.%d.json", prefix, rank);
  FILE* f = fopen(path, "w");
  if (!f) return (void)fprintf(stderr, "mpi_bytes: cannot write %s\n", path);
  uint64_t tb[NF] = {0}, tn[NF] = {0};
  fprintf(f, "{\"rank\":%d,\"size\":%d,\"phases\":{", rank, size);
  for (int p = 0; p < NPH; ++p) {
    uint64_t b = 0, rb = 0, n = 0;
    for (int i = 0; i < NF; ++i) {
      *(IS_REDUCTION(i) ? &rb : &b) += g_bytes[p][i];
      n += g_calls[p][i];
      tb[i] += g_bytes[p][i];
      tn[i] += g_calls[p][i];
    }
    fprintf(f, "%s\n\"%s\":{\"bytes\":%llu,\"reduce_bytes\":%llu,\"calls\":%llu,\"functions\":",
            p ? "," : "", phase_name[p], (unsigned long long)b, (unsigned long long)rb,
            (unsigned long long)n);
    write_fns(f, g_bytes[p], g_calls[p]);
    fputc('}', f);
  }
  fputs("},\n\"functions\":", f);
  write_fns(f, tb, tn);
  fputs("}\n", f);
  fclose(f);
}
int MPI_Finalize(void) {
  write_json();
  return PMPI_Finalize();
}
