// The whole `cairn` command line, with the operators linked into this program added to it.
#include <cairn/cairn.h>

int main(int argc, char** argv) { return cairn::CairnMain(argc, argv); }
