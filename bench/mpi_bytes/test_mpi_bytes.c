/* Test program for mpi_bytes.so: known exchanges inside MPI_Pcontrol phases plus a distributed
 * FFTW-MPI r2c/c2r 3D transform (TRANSPOSED_OUT/IN, in place, as src/ewald/mpi/fft_mpi.cpp).
 * Each rank writes what the interposer should count to <prefix>.<rank>.expect.json;
 * check.py compares it with <prefix>.<rank>.json.
 * Usage: test_mpi_bytes PREFIX [M0 M1 M2 [estimate|measure|patient]] (FFTW planner flag) */
#include <fftw3-mpi.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static int P, r;
static long long expect[8], expect_red[8]; /* per phase 1000..1007 */

static void* xmalloc(size_t n) { return calloc(n ? n : 1, 1); }

int main(int argc, char** argv) {
  int provided;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  MPI_Comm_size(MPI_COMM_WORLD, &P);
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  const ptrdiff_t M0 = argc > 4 ? atol(argv[2]) : 32, M1 = argc > 4 ? atol(argv[3]) : 24,
                  M2 = argc > 4 ? atol(argv[4]) : 20, NC = M2 / 2 + 1;
  const char* how = argc > 5 ? argv[5] : "estimate";
  const unsigned flag = how[0] == 'm' ? FFTW_MEASURE : how[0] == 'p' ? FFTW_PATIENT : FFTW_ESTIMATE;
  const int right = (r + 1) % P, left = (r + P - 1) % P;
  MPI_Comm w = MPI_COMM_WORLD;
  double* d = xmalloc(sizeof(double) * 64 * P * P + 4096);
  double* e = xmalloc(sizeof(double) * 64 * P * P + 4096);

  /* setup: Allgather, Bcast, Gather, Scatterv */
  MPI_Pcontrol(1001);
  MPI_Allgather(d, 2, MPI_INT, e, 2, MPI_INT, w);
  expect[1] += 8LL * (P - 1);
  MPI_Bcast(d, 10, MPI_DOUBLE, 0, w);
  expect[1] += r == 0 ? 80LL * (P - 1) : 0;
  MPI_Gather(d, 3, MPI_INT, e, 3, MPI_INT, 0, w);
  expect[1] += r != 0 ? 12 : 0;
  {
    int* sc = xmalloc(sizeof(int) * P * 2);
    int* sd = sc + P;
    for (int i = 0, o = 0; i < P; o += i + 1, ++i) sc[i] = i + 1, sd[i] = o;
    MPI_Scatterv(d, sc, sd, MPI_DOUBLE, e, r + 1, MPI_DOUBLE, 0, w);
    if (r == 0)
      for (int i = 1; i < P; ++i) expect[1] += 8LL * (i + 1);
    free(sc);
  }
  MPI_Pcontrol(1000);

  /* SORT: Alltoall (3 ints a block), Alltoall in place (2 doubles), Alltoallv uneven */
  MPI_Pcontrol(1002);
  MPI_Alltoall(d, 3, MPI_INT, e, 3, MPI_INT, w);
  expect[2] += 12LL * (P - 1);
  MPI_Alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, e, 2, MPI_DOUBLE, w);
  expect[2] += 16LL * (P - 1);
  {
    int* c = xmalloc(sizeof(int) * P * 4);
    int *sd = c + P, *rc = c + 2 * P, *rd = c + 3 * P;
    for (int j = 0, so = 0, ro = 0; j < P; ++j) {
      c[j] = (r + 1) * (j + 2), sd[j] = so, so += c[j];
      rc[j] = (j + 1) * (r + 2), rd[j] = ro, ro += rc[j];
      if (j != r) expect[2] += 8LL * c[j];
    }
    MPI_Alltoallv(d, c, sd, MPI_DOUBLE, e, rc, rd, MPI_DOUBLE, w);
    free(c);
  }
  MPI_Pcontrol(1000);

  /* GHOST-SOURCE: Sendrecv ring to the right, Sendrecv_replace ring to the left */
  MPI_Pcontrol(1003);
  MPI_Sendrecv(d, 5 + r, MPI_DOUBLE, right, 1, e, 5 + left, MPI_DOUBLE, left, 1, w,
               MPI_STATUS_IGNORE);
  expect[3] += P > 1 ? 8LL * (5 + r) : 0;
  MPI_Sendrecv_replace(d, 4, MPI_INT, left, 2, right, 2, w, MPI_STATUS_IGNORE);
  expect[3] += P > 1 ? 16 : 0;
  MPI_Pcontrol(1000);

  /* GHOST-GRID: Isend/Irecv to the right, to self (not counted), a derived type to the left,
   * a Send to MPI_PROC_NULL (not counted); an out-of-range Pcontrol level is ignored */
  MPI_Pcontrol(1004);
  {
    MPI_Request q[6];
    MPI_Datatype t3;
    MPI_Type_contiguous(3, MPI_DOUBLE, &t3);
    MPI_Type_commit(&t3);
    float *f = xmalloc(sizeof(float) * 8 * P), *g = xmalloc(sizeof(float) * 8 * P);
    MPI_Irecv(g, 7 * (left + 1), MPI_FLOAT, left, 3, w, &q[0]);
    MPI_Irecv(e, 100, MPI_DOUBLE, r, 4, w, &q[1]);
    MPI_Irecv(e + 200, 2, t3, right, 5, w, &q[2]);
    MPI_Pcontrol(5);
    MPI_Isend(f, 7 * (r + 1), MPI_FLOAT, right, 3, w, &q[3]);
    MPI_Isend(d, 100, MPI_DOUBLE, r, 4, w, &q[4]);
    MPI_Isend(d + 200, 2, t3, left, 5, w, &q[5]);
    MPI_Waitall(6, q, MPI_STATUSES_IGNORE);
    MPI_Send(d, 9, MPI_DOUBLE, MPI_PROC_NULL, 6, w);
    expect[4] += P > 1 ? 28LL * (r + 1) + 48 : 0;
    MPI_Type_free(&t3);
    free(f), free(g);
  }
  MPI_Pcontrol(1000);

  /* FFT / IFFT: plans made outside the phases (FFTW-MPI's planning traffic lands in "other") */
  fftw_mpi_init();
  ptrdiff_t n0, s0, n1, s1;
  const ptrdiff_t alloc = fftw_mpi_local_size_3d_transposed(M0, M1, NC, w, &n0, &s0, &n1, &s1);
  double* a = fftw_alloc_real(2 * alloc);
  fftw_plan fw = fftw_mpi_plan_dft_r2c_3d(M0, M1, M2, a, (fftw_complex*)a, w,
                                          flag | FFTW_MPI_TRANSPOSED_OUT);
  fftw_plan bw = fftw_mpi_plan_dft_c2r_3d(M0, M1, M2, (fftw_complex*)a, a, w,
                                          flag | FFTW_MPI_TRANSPOSED_IN);
  for (ptrdiff_t i = 0; i < n0; ++i)
    for (ptrdiff_t j = 0; j < M1; ++j)
      for (ptrdiff_t k = 0; k < M2; ++k)
        a[(i * M1 + j) * 2 * NC + k] = sin(0.3 * (s0 + i) + 0.7 * j * j - 0.11 * k * (s0 + i));
  MPI_Pcontrol(1005), fftw_execute(fw), MPI_Pcontrol(1000);
  MPI_Pcontrol(1006), fftw_execute(bw), MPI_Pcontrol(1000);
  double err = 0;
  for (ptrdiff_t i = 0; i < n0; ++i)
    for (ptrdiff_t j = 0; j < M1; ++j)
      for (ptrdiff_t k = 0; k < M2; ++k) {
        double x = sin(0.3 * (s0 + i) + 0.7 * j * j - 0.11 * k * (s0 + i));
        err = fmax(err, fabs(a[(i * M1 + j) * 2 * NC + k] / (M0 * M1 * M2) - x));
      }
  MPI_Allreduce(MPI_IN_PLACE, &err, 1, MPI_DOUBLE, MPI_MAX, w); /* "other" */
  /* slab transpose model: all local data except the block that stays on this rank */
  expect[5] = 16LL * n0 * (M1 - n1) * NC;
  expect[6] = 16LL * n1 * (M0 - n0) * NC;

  /* reduce: Allreduce of 4 doubles -> reduce_bytes only */
  MPI_Pcontrol(1007), MPI_Allreduce(d, e, 4, MPI_DOUBLE, MPI_SUM, w), MPI_Pcontrol(1000);
  expect_red[7] += P > 1 ? 32 : 0;

  char path[4096];
  snprintf(path, sizeof path, "%s.%d.expect.json", argv[1], r);
  FILE* out = fopen(path, "w");
  static const char* const nm[8] = {"other", "setup", "SORT", "GHOST-SOURCE",
                                    "GHOST-GRID", "FFT", "IFFT", "reduce"};
  fprintf(out, "{\"planner\":\"%s\",\"grid\":[%td,%td,%td],\"local_n0\":%td,\"local_n1\":%td,\"alloc\":%td,"
          "\"roundtrip_err\":%.3e,\"phases\":{", how, M0, M1, M2, n0, n1, alloc, err);
  for (int p = 1; p < 8; ++p)
    fprintf(out, "%s\"%s\":{\"bytes\":%lld,\"reduce_bytes\":%lld}", p > 1 ? "," : "", nm[p],
            expect[p], expect_red[p]);
  fprintf(out, "}}\n");
  fclose(out);
  fftw_destroy_plan(fw), fftw_destroy_plan(bw), fftw_free(a), free(d), free(e);
  fftw_mpi_cleanup();
  MPI_Finalize();
  return 0;
}
