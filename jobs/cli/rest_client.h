// `cairn savepoint JOB_URL [--dir D]` and `cairn stop JOB_URL [--savepoint D] [--drain]`: clients
// of a running job's REST API (POST /api/savepoints, POST /api/stop; docs/rest.md). Each prints
// the savepoint's directory on stdout and exits 0 once it is committed; 1 when the job could
// not take it (the reason on stderr), 2 for bad arguments or a URL that does not answer.
#pragma once

#include <string>
#include <vector>

namespace cairn {

int CmdSavepoint(const std::vector<std::string>& args);
int CmdStop(const std::vector<std::string>& args);

}  // namespace cairn
