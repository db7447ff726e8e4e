// Planning one incident: which services exist and who calls whom, which
// fault strikes where and when, what else goes on (red herrings, harmless
// changes), and how the on-call engineer words the page.
#include <algorithm>
#include <cstdio>
#include <string>

#include "examples/incident/prng.h"
#include "examples/incident/world.h"

namespace incident {
namespace {

struct service_template {
    const char* name;
    service_kind kind;
    int tier;  // calls go from a lower tier to a strictly higher one: the graph is a DAG
    std::vector<runtime_lang> langs;
    const char* operation;
    const char* external;
    std::vector<const char*> preferred;  // realistic callees, when present
};

const std::vector<service_template>& app_templates() {
    using L = runtime_lang;
    static const std::vector<service_template> t = {
        {"checkout", service_kind::app, 1, {L::java, L::go}, "POST /checkout", "",
         {"cart", "payments", "inventory", "orders", "pricing", "shipping", "auth"}},
        {"cart", service_kind::app, 2, {L::node, L::go}, "GET /cart", "",
         {"pricing", "inventory", "redis-cache", "auth", "user-profile"}},
        {"orders", service_kind::app, 2, {L::java, L::python}, "POST /orders", "",
         {"postgres-main", "kafka", "payments", "inventory", "notifications", "shipping"}},
        {"search", service_kind::app, 2, {L::java, L::python}, "GET /search", "",
         {"elasticsearch", "catalog", "redis-cache", "pricing"}},
        {"recommendations", service_kind::app, 2, {L::python}, "GET /recommendations", "",
         {"catalog", "user-profile", "redis-cache", "pricing"}},
        {"payments", service_kind::app, 3, {L::java, L::go}, "POST /payments/charge", "api.stripe.com",
         {"payments-db", "auth", "kafka", "notifications"}},
        {"shipping", service_kind::app, 3, {L::python, L::go}, "POST /shipping/quote", "api.carrier-gateway.net",
         {"postgres-main", "notifications", "redis-cache"}},
        {"inventory", service_kind::app, 3, {L::python, L::java}, "GET /inventory/stock", "",
         {"postgres-main", "redis-cache", "kafka"}},
        {"pricing", service_kind::app, 3, {L::go, L::java}, "GET /pricing/quote", "api.fx-rates.io",
         {"redis-cache", "postgres-main"}},
        {"catalog", service_kind::app, 3, {L::java, L::python}, "GET /catalog/items", "",
         {"postgres-main", "elasticsearch", "redis-cache"}},
        {"user-profile", service_kind::app, 3, {L::go, L::node}, "GET /users/profile", "cdn.avatars.example.net",
         {"postgres-main", "redis-cache", "auth"}},
        {"auth", service_kind::app, 4, {L::go, L::java}, "POST /auth/verify", "idp.okta.com",
         {"redis-cache", "postgres-main"}},
        {"notifications", service_kind::app, 4, {L::node, L::python}, "POST /notify", "api.twilio.com",
         {"kafka"}},
    };
    return t;
}

const std::vector<service_template>& store_templates() {
    using L = runtime_lang;
    static const std::vector<service_template> t = {
        {"postgres-main", service_kind::sql_store, 9, {L::native}, "SELECT orders", "", {}},
        {"payments-db", service_kind::sql_store, 9, {L::native}, "UPDATE payments", "", {}},
        {"redis-cache", service_kind::cache_store, 9, {L::native}, "GET cache", "", {}},
        {"kafka", service_kind::queue_store, 9, {L::java}, "produce events", "", {}},
        {"elasticsearch", service_kind::search_store, 9, {L::java}, "POST /_search", "", {}},
    };
    return t;
}

const char* edge_names[] = {"api-gateway", "web-frontend", "edge-proxy"};

bool calls_kind(const incident_plan& p, int s, service_kind k) {
    for (int c : p.services[static_cast<size_t>(s)].callees)
        if (p.services[static_cast<size_t>(c)].kind == k) return true;
    return false;
}

// Can `f` strike service `s` in this topology?
bool eligible(const incident_plan& p, int s, fault_type f) {
    const service& sv = p.services[static_cast<size_t>(s)];
    const bool app = sv.kind == service_kind::app;
    switch (f) {
        case fault_type::connection_pool_exhaustion:
            return (app && calls_kind(p, s, service_kind::sql_store)) || sv.kind == service_kind::sql_store;
        case fault_type::oom_kill:
            return app || sv.kind == service_kind::cache_store || sv.kind == service_kind::search_store ||
                   sv.kind == service_kind::queue_store;
        case fault_type::bad_deploy:
        case fault_type::config_error:
            return app;
        case fault_type::dns_failure:
            return app && !sv.callees.empty();
        case fault_type::certificate_expiry:
        case fault_type::upstream_timeout:
        case fault_type::rate_limited:
            return app && !sv.external.empty();
        case fault_type::cache_stampede:
            return app && calls_kind(p, s, service_kind::cache_store);
        case fault_type::disk_full:
            return is_store(sv.kind);
        case fault_type::slow_query:
            return sv.kind == service_kind::sql_store || sv.kind == service_kind::search_store;
        case fault_type::deadlock:
            return sv.kind == service_kind::sql_store;
    }
    return false;
}


// One topology: an edge, 3..9 apps, 1..3 stores; callees only at higher tiers.
void build_topology(incident_plan& p, prng& rng) {
    const int n_services = static_cast<int>(rng.range(5, 12));
    const int n_stores_max = std::min(3, n_services - 4);
    std::vector<const service_template*> apps;
    for (const auto& t : app_templates()) apps.push_back(&t);
    rng.shuffle(apps);
    // checkout is the flagship path: present in most incidents
    if (rng.chance(0.6)) {
        auto it = std::find_if(apps.begin(), apps.end(), [](auto* t) { return std::string(t->name) == "checkout"; });
        std::rotate(apps.begin(), it, it + 1);
    }
    const int n_stores = static_cast<int>(rng.range(1, std::max(1, n_stores_max)));
    const int n_apps = n_services - 1 - n_stores;
    apps.resize(static_cast<size_t>(n_apps));

    // stores: prefer the ones the chosen apps like to call
    std::vector<const service_template*> stores;
    for (const auto& st : store_templates()) {
        bool wanted = false;
        for (auto* a : apps)
            for (auto* pref : a->preferred) wanted = wanted || std::string(pref) == st.name;
        if (wanted) stores.push_back(&st);
    }
    rng.shuffle(stores);
    for (const auto& st : store_templates()) {
        if (std::find(stores.begin(), stores.end(), &st) == stores.end()) stores.push_back(&st);
    }
    stores.resize(static_cast<size_t>(n_stores));

    std::vector<const service_template*> chosen = apps;
    chosen.insert(chosen.end(), stores.begin(), stores.end());
    std::stable_sort(chosen.begin(), chosen.end(), [](auto* a, auto* b) { return a->tier < b->tier; });

    p.services.clear();
    service edge;
    edge.name = edge_names[rng.below(3)];
    edge.kind = service_kind::edge;
    edge.lang = rng.chance(0.5) ? runtime_lang::go : runtime_lang::node;
    edge.style = rng.chance(0.5) ? log_style::json : log_style::plain;
    edge.access_log = true;
    edge.operation = "GET /";
    p.services.push_back(edge);
    for (auto* t : chosen) {
        service s;
        s.name = t->name;
        s.kind = t->kind;
        s.lang = rng.pick(t->langs);
        s.operation = t->operation;
        s.external = t->external;
        if (s.kind == service_kind::app) {
            const uint64_t r = rng.below(10);
            s.style = r < 4 ? log_style::json : r < 8 ? log_style::plain : log_style::syslog;
        } else {
            s.style = rng.chance(0.7) ? log_style::plain : log_style::syslog;
        }
        p.services.push_back(s);
    }
    for (auto& s : p.services) {
        s.pid = static_cast<int>(rng.range(300, 32000));
        s.host = "ip-10-0-" + std::to_string(rng.range(1, 9)) + "-" + std::to_string(rng.range(2, 250));
    }

    auto index_of = [&](const std::string& name) {
        for (size_t i = 0; i < p.services.size(); ++i)
            if (p.services[i].name == name) return static_cast<int>(i);
        return -1;
    };
    auto tier_of = [&](int i) { return i == 0 ? 0 : chosen[static_cast<size_t>(i - 1)]->tier; };

    // preferred edges, each kept with high probability, at most 3 per app
    for (int i = 1; i < static_cast<int>(p.services.size()); ++i) {
        if (p.services[static_cast<size_t>(i)].kind != service_kind::app) continue;
        std::vector<int> callees;
        for (auto* pref : chosen[static_cast<size_t>(i - 1)]->preferred) {
            const int j = index_of(pref);
            if (j > 0 && tier_of(j) > tier_of(i) && rng.chance(0.8)) callees.push_back(j);
        }
        rng.shuffle(callees);
        if (callees.size() > 3) callees.resize(3);
        p.services[static_cast<size_t>(i)].callees = callees;
    }
    // every store has a caller
    for (int j = 1; j < static_cast<int>(p.services.size()); ++j) {
        if (!is_store(p.services[static_cast<size_t>(j)].kind)) continue;
        bool called = false;
        for (const auto& s : p.services)
            for (int c : s.callees) called = called || c == j;
        if (called) continue;
        std::vector<int> apps_idx;
        for (int i = 1; i < static_cast<int>(p.services.size()); ++i)
            if (p.services[static_cast<size_t>(i)].kind == service_kind::app) apps_idx.push_back(i);
        p.services[static_cast<size_t>(rng.pick(apps_idx))].callees.push_back(j);
    }
    // apps nobody calls are entries of the edge; keep at most 4 entries
    p.entries.clear();
    for (int j = 1; j < static_cast<int>(p.services.size()); ++j) {
        if (p.services[static_cast<size_t>(j)].kind != service_kind::app) continue;
        bool called = false;
        for (const auto& s : p.services)
            for (int c : s.callees) called = called || c == j;
        if (called) continue;
        if (p.entries.size() >= 4 || (!p.entries.empty() && rng.chance(0.3))) {
            // attach below an app of a lower tier, if any
            std::vector<int> parents;
            for (int i = 1; i < static_cast<int>(p.services.size()); ++i)
                if (p.services[static_cast<size_t>(i)].kind == service_kind::app && tier_of(i) < tier_of(j))
                    parents.push_back(i);
            if (!parents.empty()) {
                p.services[static_cast<size_t>(rng.pick(parents))].callees.push_back(j);
                continue;
            }
        }
        p.entries.push_back(j);
    }
    for (auto& s : p.services) std::sort(s.callees.begin(), s.callees.end());
    p.services[0].callees = p.entries;
}

// Services reachable from `from` (excluding it), through callees.
std::vector<int> descendants(const incident_plan& p, int from) {
    std::vector<char> seen(p.services.size(), 0);
    std::vector<int> stack = {from}, out;
    while (!stack.empty()) {
        const int s = stack.back();
        stack.pop_back();
        for (int c : p.services[static_cast<size_t>(s)].callees) {
            if (seen[static_cast<size_t>(c)]) continue;
            seen[static_cast<size_t>(c)] = 1;
            out.push_back(c);
            stack.push_back(c);
        }
    }
    std::sort(out.begin(), out.end());
    return out;
}

// A random path from `from` to `to` along callees (to is a descendant).
std::vector<int> random_path(const incident_plan& p, int from, int to, prng& rng) {
    std::vector<int> path = {from};
    while (path.back() != to) {
        std::vector<int> next;
        for (int c : p.services[static_cast<size_t>(path.back())].callees) {
            if (c == to) {
                next = {c};
                break;
            }
            const auto d = descendants(p, c);
            if (std::binary_search(d.begin(), d.end(), to)) next.push_back(c);
        }
        TACHYON_ASSERT(!next.empty(), "random_path: target not reachable");
        path.push_back(rng.pick(next));
    }
    return path;
}

std::string version_bump(prng& rng, std::string& old_version) {
    const int major = static_cast<int>(rng.range(1, 4));
    const int minor = static_cast<int>(rng.range(0, 30));
    const int patch = static_cast<int>(rng.range(0, 9));
    old_version = "v" + std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
    if (rng.chance(0.5)) return "v" + std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch + 1);
    return "v" + std::to_string(major) + "." + std::to_string(minor + 1) + ".0";
}

const std::vector<const char*> people = {"alice", "bob", "carol", "dmitri", "erin", "farid", "grace", "hiro"};

std::string symptom_words(fault_type f, prng& rng) {
    const bool slow = f == fault_type::slow_query || f == fault_type::deadlock || f == fault_type::upstream_timeout ||
                      f == fault_type::connection_pool_exhaustion || f == fault_type::cache_stampede;
    if (slow) return rng.pick(std::vector<std::string>{"timeouts", "504s", "slow requests and timeouts", "5xx errors"});
    return rng.pick(std::vector<std::string>{"502s", "500 errors", "5xx errors", "failed requests", "errors"});
}

std::string write_task(const incident_plan& p, prng& rng) {
    const service& sym = p.services[static_cast<size_t>(p.symptom)];
    std::string what = sym.name;
    if (sym.kind == service_kind::edge) {
        const service& via = p.services[static_cast<size_t>(p.path.size() > 1 ? p.path[1] : p.entries[0])];
        what += " (" + via.operation.substr(via.operation.find(' ') + 1) + ")";
    }
    // the page goes out a few minutes after the fault, rounded to 5 minutes
    const time_ms noticed = (p.fault_start + 150000) / 300000 * 300000;
    const std::string at = hh_mm(noticed);
    const std::string words = symptom_words(p.fault, rng);
    switch (rng.below(7)) {
        case 0: return "Users report " + what + " " + words + " since ~" + at + " UTC. Find the root cause.";
        case 1:
            return "Alert: " + what + " error rate above 5% since about " + at +
                   " UTC. Please find the root cause service.";
        case 2:
            return "Customers are seeing " + words + " from " + what + " starting around " + at +
                   " UTC. What broke? Identify the root cause.";
        case 3:
            return what + " has been returning " + words + " since ~" + at +
                   " UTC according to the dashboards. Can you figure out the root cause?";
        case 4:
            return "On-call page: " + what + " " + words + " began near " + at +
                   " UTC and are still ongoing. Investigate and name the root cause.";
        case 5:
            return "Support tickets are piling up: " + what + " " + words + " since roughly " + at +
                   " UTC. Please track down the root cause.";
        default:
            return "Seeing elevated " + words + " on " + what + " since ~" + at +
                   " UTC. Find which service is the root cause and why.";
    }
}

}  // namespace

bool is_store(service_kind k) {
    return k == service_kind::sql_store || k == service_kind::cache_store || k == service_kind::queue_store ||
           k == service_kind::search_store;
}

incident_plan plan_incident(uint64_t seed, int scale) {
    incident_plan p;
    p.seed = seed;
    p.scale = std::max(1, scale);
    prng rng(seed * 0x9E3779B97F4A7C15ull + 0x1CE1DE47ull);

    // the fault first, so that every fault type is equally frequent; then a
    // topology where it can strike below an entry of the edge
    p.fault = static_cast<fault_type>(rng.below(n_fault_types));
    for (int attempt = 0;; ++attempt) {
        TACHYON_ASSERT(attempt < 1000, "plan_incident: no topology fits the fault");
        build_topology(p, rng);
        std::vector<std::pair<int, int>> candidates;  // (entry, root)
        for (int e : p.entries)
            for (int d : descendants(p, e))
                if (eligible(p, d, p.fault)) candidates.push_back({e, d});
        if (candidates.empty()) continue;
        const auto [entry, root] = rng.pick(candidates);
        p.root = root;
        p.symptom = rng.chance(0.15) ? 0 : entry;
        p.path = random_path(p, entry, root, rng);
        if (p.symptom == 0) p.path.insert(p.path.begin(), 0);
        break;
    }

    // timeline: a 30..60 minute window of some day of 2026; the fault starts mid-window
    const int month = static_cast<int>(rng.range(1, 12));
    const int day = static_cast<int>(rng.range(1, 28));
    p.window_start = make_time(2026, month, day, static_cast<int>(rng.range(0, 23)),
                               static_cast<int>(rng.range(0, 59)), static_cast<int>(rng.range(0, 59)));
    const time_ms length = rng.range(30, 60) * 60000;
    p.window_end = p.window_start + length;
    p.fault_start = p.window_start + static_cast<time_ms>(static_cast<double>(length) * rng.real(0.4, 0.65)) +
                    rng.range(0, 999);
    p.fail_probability = rng.real(0.55, 0.95);
    p.request_rate = rng.real(0.15, 0.35);

    // a red herring: a service with unrelated errors, neither a caller of the
    // root (whose failures it would blur) nor below it (where it would look
    // like an earlier failure)
    {
        const auto below_root = descendants(p, p.root);
        std::vector<int> candidates;
        for (int i = 1; i < static_cast<int>(p.services.size()); ++i) {
            if (i == p.root || std::binary_search(below_root.begin(), below_root.end(), i)) continue;
            const auto below = descendants(p, i);
            if (std::binary_search(below.begin(), below.end(), p.root)) continue;
            candidates.push_back(i);
        }
        if (!candidates.empty() && rng.chance(0.85)) {
            p.red_herring = rng.pick(candidates);
            const time_ms span = p.window_end - p.window_start;
            if (rng.chance(0.5)) {  // started before the fault
                p.red_herring_start = p.window_start + static_cast<time_ms>(static_cast<double>(span) * rng.real(0.05, 0.3));
            } else {
                p.red_herring_start = p.fault_start + static_cast<time_ms>(static_cast<double>(span) * rng.real(0.1, 0.3));
            }
            p.red_herring_end = rng.chance(0.5) ? p.window_end
                                                : p.red_herring_start + static_cast<time_ms>(static_cast<double>(span) * rng.real(0.1, 0.3));
        }
    }

    // one or two chatty services log benign warnings (never the root or below it)
    {
        const auto below_root = descendants(p, p.root);
        std::vector<int> candidates;
        for (int i = 1; i < static_cast<int>(p.services.size()); ++i)
            if (i != p.root && !std::binary_search(below_root.begin(), below_root.end(), i)) candidates.push_back(i);
        rng.shuffle(candidates);
        const size_t n_noisy = std::min<size_t>(candidates.size(), static_cast<size_t>(rng.range(0, 2)));
        p.noisy.assign(candidates.begin(), candidates.begin() + static_cast<std::ptrdiff_t>(n_noisy));
        std::sort(p.noisy.begin(), p.noisy.end());
    }

    // changes: the culprit for bad_deploy/config_error, plus harmless ones elsewhere
    if (p.fault == fault_type::bad_deploy) {
        std::string old_v;
        const std::string new_v = version_bump(rng, old_v);
        p.changes.push_back({p.fault_start - rng.range(20, 300) * 1000 - rng.range(0, 999),
                             "deploy " + p.services[static_cast<size_t>(p.root)].name + " " + old_v + " -> " + new_v +
                                 " by " + rng.pick(std::vector<std::string>{"ci-bot", "argocd", "spinnaker"})});
    } else if (p.fault == fault_type::config_error) {
        struct cfg { const char* key; const char* old_v; const char* new_v; };
        static const std::vector<cfg> cfgs = {
            {"http.client.timeout", "2s", "2"},
            {"upstream.base_url", "http://pricing:8080", "http//pricing:8080"},
            {"retry.max_attempts", "3", "three"},
            {"db.pool.max_size", "50", "-1"},
            {"feature.limits.max_items", "100", "100items"},
            {"tls.min_version", "1.2", "1.4"},
            {"cache.ttl", "300s", "5 minutes"},
        };
        const cfg& c = rng.pick(cfgs);
        p.config_key = c.key;
        p.config_old = c.old_v;
        p.config_new = c.new_v;
        p.changes.push_back({p.fault_start - rng.range(10, 180) * 1000 - rng.range(0, 999),
                             "config " + p.services[static_cast<size_t>(p.root)].name + " " + c.key + " " + c.old_v +
                                 " -> " + c.new_v + " by " + rng.pick(people)});
    }
    {
        std::vector<int> others;
        for (int i = 0; i < static_cast<int>(p.services.size()); ++i)
            if (i != p.root) others.push_back(i);
        const int n_harmless = static_cast<int>(rng.range(1, 4));
        for (int k = 0; k < n_harmless; ++k) {
            const service& s = p.services[static_cast<size_t>(rng.pick(others))];
            // from two hours before the window to its end; some close to the fault
            const time_ms at = rng.chance(0.4) ? p.fault_start - rng.range(60, 900) * 1000
                                               : p.window_start - rng.range(-1800, 7200) * 1000;
            std::string text;
            switch (rng.below(4)) {
                case 0: {
                    std::string old_v;
                    const std::string new_v = version_bump(rng, old_v);
                    text = "deploy " + s.name + " " + old_v + " -> " + new_v + " by " +
                           rng.pick(std::vector<std::string>{"ci-bot", "argocd", "spinnaker"});
                    break;
                }
                case 1:
                    text = "config " + s.name + " " +
                           rng.pick(std::vector<std::string>{"log.level INFO -> DEBUG", "cache.ttl_seconds 300 -> 600",
                                                             "metrics.interval 30s -> 15s", "http.keepalive 60s -> 90s"}) +
                           " by " + rng.pick(people);
                    break;
                case 2: {
                    const int from = static_cast<int>(rng.range(2, 6));
                    text = "scale " + s.name + " replicas " + std::to_string(from) + " -> " +
                           std::to_string(from + rng.range(1, 3)) + " by autoscaler";
                    break;
                }
                default:
                    text = "feature_flag " + s.name + " " +
                           rng.pick(std::vector<std::string>{"new_banner", "dark_mode", "async_receipts", "beta_search_ui"}) +
                           " off -> on by " + rng.pick(people);
            }
            p.changes.push_back({at, text});
        }
    }
    std::stable_sort(p.changes.begin(), p.changes.end(), [](const auto& a, const auto& b) { return a.at < b.at; });

    p.task = write_task(p, rng);
    return p;
}

}  // namespace incident
