#include "jobs/cli/cli.h"

int main(int argc, char** argv) { return cairn::CairnMain(argc, argv); }
