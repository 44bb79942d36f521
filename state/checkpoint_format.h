// The on-disk layout of checkpoints. Everything a checkpoint stores is checksummed.
//
//   <checkpoint.dir>/
//     _lock                         flock()ed by the running job (one job per directory)
//     _superseded                   ids of checkpoints that may no longer be restored (see
//                                   CheckpointStore::Supersede)
//     _shared_lock                  flock()ed, by any process, while a SHARED list is written and
//                                   its files linked, and while shared/ is collected
//     _work/<run>/<op>-<subtask>/   working RocksDB of a running job (not part of any checkpoint;
//                                   left-overs of dead runs are removed at start-up)
//     shared/<op>-<subtask>/<token>-<n>.sst  SST files of incremental keyed-state checkpoints,
//                                   referenced by the SHARED lists of one or more chk-<id>/
//                                   (state/shared_files.h); deleted once none references them
//     shared/<op>-<subtask>/<token>-changelog.<seq>, <token>-m<id>-<name>  state.changelog:
//                                   changelog segments and materialization files, listed the
//                                   same way (state/changelog_segment.h)
//     chk-<id>/                     one checkpoint; complete iff _metadata exists
//       _metadata                   the commit point, written last (tmp + fsync + rename + fsync dir)
//       <op>-<subtask>/keyed/       RocksDB checkpoint of the subtask's keyed state (if keyed):
//                                   either a whole database (full), or its MANIFEST, CURRENT
//                                   and OPTIONS plus SHARED, the list of its SST files in shared/
//                                   (incremental, what a running job writes)
//       <op>-<subtask>/operator.state  operator state blob (WriteChecksummedFile format)
//       <op>-<subtask>/list.state      the operator's list states (same format; the bytes are
//                                      state/operator_list_state.h's)
//       <op>-<subtask>/channel.state   unaligned checkpoints: in-flight records of the input
//                                      channels of the task whose chain head is <op> (same format)
//
// _metadata is text: a header line "cairn-checkpoint <version>", one "key value" line per
// field, one "subtask ..." line per subtask state, and a final "crc32c <hex>" line covering
// every byte before it. See docs/checkpoints.md.
#pragma once

#include <cstdint>

namespace cairn {

inline constexpr const char* kMetadataMagic = "cairn-checkpoint";
inline constexpr uint32_t kMetadataFormatVersion = 1;
inline constexpr const char* kMetadataFileName = "_metadata";
inline constexpr const char* kCheckpointDirPrefix = "chk-";
inline constexpr const char* kWorkDirName = "_work";
inline constexpr const char* kLockFileName = "_lock";
// Ranges of checkpoint ids a restore of an older checkpoint or a `--fresh` start abandoned:
// one line "<first> <last> <reason>" each (CheckpointStore::Supersede).
inline constexpr const char* kSupersededFileName = "_superseded";
// The newest failed checkpoints, one line "<id>\t<kind>\t<trigger ms>\t<duration ms>\t<reason>"
// each (CheckpointStore::RecordFailure), for `cairn checkpoints`; no restore reads it.
inline constexpr const char* kFailedFileName = "_failed";
inline constexpr const char* kKeyedStateDirName = "keyed";
inline constexpr const char* kSharedDirName = "shared";
inline constexpr const char* kSharedListFileName = "SHARED";
inline constexpr const char* kSharedLockFileName = "_shared_lock";
inline constexpr const char* kOperatorStateFileName = "operator.state";
inline constexpr const char* kListStateFileName = "list.state";
inline constexpr const char* kChannelStateFileName = "channel.state";

}  // namespace cairn
