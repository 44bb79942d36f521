// Cairn's public C++ API, one include for a program of one's own that adds operators (installed
// as <cairn/cairn.h>; find_package(Cairn) and link Cairn::cairn; docs/operators.md).
//
// Such a program defines operators (engine/dataflow/operator.h), registers each with
// CAIRN_REGISTER_OPERATOR (jobs/registry.h) in its own .cc file, and hands its main() to
// CairnMain, which is the whole `cairn` command line: its YAML jobs may then use the new types
// next to the built-in ones, with checkpoints, kill and restore as usual.
#pragma once

#include "engine/base/status.h"
#include "engine/dataflow/operator.h"
#include "engine/dataflow/record_batch.h"
#include "engine/dataflow/record_codec.h"
#include "engine/dataflow/schema.h"
#include "jobs/cli/cli.h"
#include "jobs/registry.h"
#include "state/keyed_state_api.h"
#include "state/operator_list_state.h"
