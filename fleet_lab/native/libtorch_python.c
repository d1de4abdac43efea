/* fleet lab stand-in for torch/lib/libtorch_python.so: the layer between _C and libtorch_cpu. */
const char *torch_cpu_backends(void);

const char *torch_python_backends(void) { return torch_cpu_backends(); }
