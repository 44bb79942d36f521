// The `cairn` command line: run, validate, checkpoints, generate, kafka mock, debug.
//
// Exit codes: 0 success (a bounded job completed); 1 the job failed; 2 bad input (usage, YAML,
// a missing or unreadable checkpoint or input). Errors go to stderr and say what and where.
#pragma once

namespace cairn {

int CairnMain(int argc, char** argv);

}  // namespace cairn
