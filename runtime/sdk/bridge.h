// How the SDK's public types (runtime/include/tachyon/) map onto the
// runtime's internals: the private parts of agent, model and runtime, and
// the conversions between public and internal errors, sampling and tools.
// Internal: never installed, never included by a public header.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/result.h"
#include "inference/engine/sampler.h"
#include "runtime/agent/agent_def.h"
#include "runtime/chat/model_host.h"
#include "tachyon/agent.h"
#include "tachyon/chat.h"
#include "tachyon/result.h"
#include "tachyon/runtime.h"
#include "tachyon/tool.h"
#include "tools/core/tool.h"

namespace tachyon::sdk {

struct agent::impl {
    std::shared_ptr<const agent_definition> definition;
    std::vector<std::shared_ptr<tools::tool>> custom_tools;  // C++ tools, adapted, found by name before built-ins
};

struct model::impl {
    std::shared_ptr<model_host> host;
};

struct agent_access {
    using impl = agent::impl;
    static const agent::impl& get(const agent& a) { return *a.impl_; }
    static agent make(std::shared_ptr<const agent::impl> i) { return agent(std::move(i)); }
};

struct model_access {
    using impl = model::impl;
    static model make(std::shared_ptr<model_host> host) { return model(std::make_shared<impl>(impl{std::move(host)})); }
};

// Test hook: serve a model that was not loaded from a file (a scripted model)
// for agents whose model path is `path`.
struct runtime_access {
    static void add_model(runtime& rt, const std::string& path, std::shared_ptr<model_host> host);
};

// The public error for an internal one (same code, same message).
sdk::error to_public(const ::tachyon::error& e);
// The internal error for a public one.
::tachyon::error to_internal(const sdk::error& e);

// Sampling options as the engine's sampler takes them.
sampling_params to_internal(const sampling_options& s);

// A public C++ tool as the runtime calls it: name, description and schema
// read once; exceptions from invoke() become error results for the model.
std::shared_ptr<tools::tool> adapt_tool(std::shared_ptr<sdk::tool> t);

}  // namespace tachyon::sdk
