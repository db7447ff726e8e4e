// tachyon C++ SDK, everything at once. After installing tachyon:
//
//   find_package(tachyon CONFIG REQUIRED)
//   target_link_libraries(app PRIVATE tachyon::tachyon)
//
// runtime.h runs agents (agent.h) with C++ tools (tool.h) and live events
// (events.h); chat.h is plain chat completion; result.h is how every call
// reports a failure. README.md beside these headers walks through them.
#pragma once

#include "tachyon/agent.h"
#include "tachyon/chat.h"
#include "tachyon/events.h"
#include "tachyon/mcp.h"
#include "tachyon/result.h"
#include "tachyon/runtime.h"
#include "tachyon/sampling.h"
#include "tachyon/tool.h"
