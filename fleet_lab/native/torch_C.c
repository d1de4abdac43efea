/* fleet lab stand-in for torch._C: a real CPython extension module (stable ABI, declared by hand so
 * no Python headers are needed) linked against torch/lib/libtorch_python.so, so `import torch`
 * goes through the real dynamic loader. Built with -DLAB_ARCH_FLAGS="sm_75 sm_80 ...". */
#include <stddef.h>

typedef struct _object { ptrdiff_t refcnt; void *type; } PyObject;
typedef PyObject *(*PyCFunction)(PyObject *, PyObject *);
typedef struct { const char *name; PyCFunction meth; int flags; const char *doc; } PyMethodDef;
typedef struct {
    PyObject ob_base;
    PyObject *(*m_init)(void);
    ptrdiff_t m_index;
    PyObject *m_copy;
} PyModuleDef_Base;
typedef struct {
    PyModuleDef_Base m_base;
    const char *m_name, *m_doc;
    ptrdiff_t m_size;
    PyMethodDef *m_methods;
    void *m_slots, *m_traverse, *m_clear, *m_free;
} PyModuleDef;

extern PyObject *PyModule_Create2(PyModuleDef *, int);
extern PyObject *PyUnicode_FromString(const char *);
const char *torch_python_backends(void);

#define METH_NOARGS 0x0004
#define PYTHON_API_VERSION 1013

static PyObject *arch_flags(PyObject *self, PyObject *unused) {
    (void)self; (void)unused;
    return PyUnicode_FromString(LAB_ARCH_FLAGS);
}

static PyObject *backends(PyObject *self, PyObject *unused) {
    (void)self; (void)unused;
    return PyUnicode_FromString(torch_python_backends());
}

static PyMethodDef methods[] = {
    {"_cuda_getArchFlags", arch_flags, METH_NOARGS, "CUDA architectures this build has kernels for."},
    {"_lab_backends", backends, METH_NOARGS, "Which LAPACK/BLAS/cuDSS the build calls (fleet lab)."},
    {NULL, NULL, 0, NULL},
};

static PyModuleDef module = {
    {{1, NULL}, NULL, 0, NULL}, "torch._C", "fleet lab stand-in for torch._C", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyObject *PyInit__C(void) { return PyModule_Create2(&module, PYTHON_API_VERSION); }
