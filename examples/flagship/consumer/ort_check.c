/* A consumer of the onnxruntime asset on its C API (the ABI every binding and addon links):
 * runs a model on the input of a reference file and compares each output with the reference,
 * computed another way (numpy, by make_model.py). Prints the outputs and the largest
 * difference; exits 1 when it is over the tolerance, 2 on any API or file error.
 *
 *   ort_check MODEL.onnx REFERENCE.txt [EP]
 *
 * EP: an execution provider to put before the CPU one (XNNPACK for the ARM builds); one that
 * the library lacks or refuses is an error, never a silent run on the CPU provider alone.
 *
 * REFERENCE.txt: "input N v1 … vN" and "output M w1 … wM" lines (one input, one output,
 * float32, shape [1, N]). One environment with global thread pools and no per-session
 * threads: a threaded WebAssembly build refuses per-session thread pools.
 *
 * Windows: onnxruntime takes a model path as ORTCHAR_T, a wchar_t there (a char* compiles
 * with a warning in gcc 12, an error in gcc 14, and fails to load "潭敤⽬…"). Both paths
 * come from the wide command line: a program's char argv holds them in the ANSI code page
 * (1252 on most machines), which cannot spell every path ("modèle-模型.onnx" arrives as
 * "mod\xe8le-??.onnx"). */
#ifdef _WIN32
/* first: 1.21's onnxruntime_c_api.h uses SAL's _Return_type_success_ without defining it
 * for compilers other than MSVC, and MinGW's sal.h (through windows.h) defines it */
#include <windows.h>
#include <shellapi.h>
#endif
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <onnxruntime_c_api.h>

#define MAX_VALUES 4096
#define TOLERANCE 1e-5

static const OrtApi* ort;

static int check(OrtStatus* status, const char* what) {
  if (status == NULL) return 0;
  fprintf(stderr, "ort_check: %s: %s\n", what, ort->GetErrorMessage(status));
  ort->ReleaseStatus(status);
  return 1;
}

static int read_values(FILE* f, const char* tag, float* out, size_t* n) {
  char word[32];
  if (fscanf(f, "%31s %zu", word, n) != 2 || strcmp(word, tag) != 0 || *n == 0 ||
      *n > MAX_VALUES) return 1;
  for (size_t i = 0; i < *n; i++) if (fscanf(f, "%f", &out[i]) != 1) return 1;
  return 0;
}

int main(int argc, char** argv) {
  static float input[MAX_VALUES], expected[MAX_VALUES];
  size_t n_in = 0, n_out = 0;
  if (argc != 3 && argc != 4) {
    fprintf(stderr, "usage: ort_check MODEL.onnx REFERENCE.txt [EP]\n");
    return 2;
  }
  const char* provider = argc == 4 ? argv[3] : NULL;
#ifdef _WIN32
  int wargc = 0;
  wchar_t** wargv = CommandLineToArgvW(GetCommandLineW(), &wargc);
  if (!wargv || wargc != argc) {
    fprintf(stderr, "ort_check: cannot read the command line as Windows has it\n");
    return 2;
  }
  const ORTCHAR_T* model = wargv[1];
  FILE* ref = _wfopen(wargv[2], L"r");
#else
  const ORTCHAR_T* model = argv[1];
  FILE* ref = fopen(argv[2], "r");
#endif
  if (!ref || read_values(ref, "input", input, &n_in) || read_values(ref, "output", expected, &n_out)) {
    fprintf(stderr, "ort_check: %s: not a reference file\n", argv[2]);
    return 2;
  }
  fclose(ref);

  ort = OrtGetApiBase()->GetApi(ORT_API_VERSION);
  if (!ort) { fprintf(stderr, "ort_check: the library lacks API version %d\n", ORT_API_VERSION); return 2; }
  printf("onnxruntime %s (API %d), providers: %s\n", OrtGetApiBase()->GetVersionString(),
         ORT_API_VERSION, provider ? provider : "CPU");

  OrtThreadingOptions* threading = NULL;
  OrtEnv* env = NULL;
  OrtSessionOptions* opts = NULL;
  OrtSession* session = NULL;
  OrtMemoryInfo* mem = NULL;
  OrtValue* in_value = NULL;
  OrtValue* out_value = NULL;
  OrtAllocator* alloc = NULL;
  char* in_name = NULL;
  char* out_name = NULL;
  const int64_t in_shape[2] = {1, (int64_t)n_in};
  if (check(ort->CreateThreadingOptions(&threading), "CreateThreadingOptions") ||
      check(ort->SetGlobalIntraOpNumThreads(threading, 1), "SetGlobalIntraOpNumThreads") ||
      check(ort->CreateEnvWithGlobalThreadPools(ORT_LOGGING_LEVEL_WARNING, "ort_check", threading, &env),
            "CreateEnvWithGlobalThreadPools") ||
      check(ort->CreateSessionOptions(&opts), "CreateSessionOptions") ||
      check(ort->DisablePerSessionThreads(opts), "DisablePerSessionThreads") ||
      (provider && check(ort->SessionOptionsAppendExecutionProvider(opts, provider, NULL, NULL, 0),
                         provider)) ||
      check(ort->CreateSession(env, model, opts, &session), "CreateSession") ||
      check(ort->GetAllocatorWithDefaultOptions(&alloc), "GetAllocatorWithDefaultOptions") ||
      check(ort->SessionGetInputName(session, 0, alloc, &in_name), "SessionGetInputName") ||
      check(ort->SessionGetOutputName(session, 0, alloc, &out_name), "SessionGetOutputName") ||
      check(ort->CreateCpuMemoryInfo(OrtArenaAllocator, OrtMemTypeDefault, &mem), "CreateCpuMemoryInfo") ||
      check(ort->CreateTensorWithDataAsOrtValue(mem, input, n_in * sizeof(float), in_shape, 2,
                                                ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT, &in_value),
            "CreateTensorWithDataAsOrtValue")) return 2;
  const char* in_names[1] = {in_name};
  const char* out_names[1] = {out_name};
  if (check(ort->Run(session, NULL, in_names, (const OrtValue* const*)&in_value, 1, out_names, 1,
                     &out_value), "Run")) return 2;
  OrtTensorTypeAndShapeInfo* info = NULL;
  size_t count = 0;
  float* out = NULL;
  if (check(ort->GetTensorTypeAndShape(out_value, &info), "GetTensorTypeAndShape") ||
      check(ort->GetTensorShapeElementCount(info, &count), "GetTensorShapeElementCount") ||
      check(ort->GetTensorMutableData(out_value, (void**)&out), "GetTensorMutableData")) return 2;
  ort->ReleaseTensorTypeAndShapeInfo(info);
  if (count != n_out) {
    fprintf(stderr, "ort_check: %s gives %zu outputs, the reference %zu\n", argv[1], count, n_out);
    return 1;
  }
  double worst = 0;
  printf("%s:", out_name);
  for (size_t i = 0; i < count; i++) {
    double d = fabs((double)out[i] - (double)expected[i]);
    if (!(d <= worst)) worst = d;  /* a NaN makes worst NaN, which fails below */
    printf(" %.7g", out[i]);
  }
  printf("\nmax |onnxruntime - reference| = %.3g over %zu outputs (tolerance %g): %s\n", worst,
         count, TOLERANCE, worst <= TOLERANCE ? "equal" : "DIFFERENT");
  ort->ReleaseValue(out_value);
  ort->ReleaseValue(in_value);
  ort->ReleaseMemoryInfo(mem);
  alloc->Free(alloc, in_name);
  alloc->Free(alloc, out_name);
  ort->ReleaseSession(session);
  ort->ReleaseSessionOptions(opts);
  ort->ReleaseEnv(env);
  ort->ReleaseThreadingOptions(threading);
  return worst <= TOLERANCE ? 0 : 1;
}
