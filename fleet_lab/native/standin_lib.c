/* fleet lab stand-in for one NVIDIA library (soname given at link time). It exports the library's
 * version entry point (LAB_SYMBOL) so that code linked against it has a real symbol to resolve, and
 * a string saying what it is. Built with -DLAB_SYMBOL=cudssGetVersion -DLAB_VERSION=701 -DLAB_NAME="..." */
const char fleet_lab_standin[] = "fleet lab stand-in " LAB_NAME;

int LAB_SYMBOL(void) { return LAB_VERSION; }
