// `cairn verify PATH [--json]` (docs/cli.md): checks one checkpoint or savepoint, or every
// checkpoint and savepoint directly inside a directory, without changing anything. For each:
// its _metadata reads back (checksum, fields); every operator-, list- and channel-state file it
// references exists and passes its checksum, and list and channel state decode; every keyed
// snapshot exists, every shared file its SHARED list references exists, and it reads through
// (RocksDB checks the checksum of every block); each keyed operator's key groups are covered
// by its subtasks exactly once. Prints one line per problem, naming the file, then one verdict
// line per checkpoint. Exit 0: sound; 1: damaged; 2: PATH is not a checkpoint (nor a
// directory holding one), or bad arguments.
#pragma once

#include <string>
#include <vector>

namespace cairn {

int CmdVerify(const std::vector<std::string>& args);

}  // namespace cairn
