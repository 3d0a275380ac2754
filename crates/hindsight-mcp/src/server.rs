//! The MCP tool surface: [`HindsightMcp`] (one per connection or HTTP session) over a shared
//! [`ServerState`] (engine, working memory, reflector).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use chrono::Utc;
use hindsight_core::{
    Error, MemoryId, MemoryKind, Namespace, NewMemory, Source, Status, Store, WorkingMemory,
};
use hindsight_engine::{Engine, SearchRequest};
use hindsight_reflect::{Method, Recalled, Reflector, TaskTrace};
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    CustomRequest, CustomResult, ErrorCode, Extensions, Implementation, ServerCapabilities,
    ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, Json, RoleServer, ServerHandler, tool, tool_handler, tool_router};
use tokio::sync::Notify;
use tracing::{info, warn};

use crate::auth::Access;
use crate::error::{invalid, to_mcp};
use crate::profile::Profile;
use crate::wire::*;

/// Most hits a search may ask for.
pub const MAX_TOP_K: u32 = 100;
/// Most steps a reflected trace may have.
pub const MAX_STEPS: usize = 200;
/// Longest working-memory value, in characters.
pub const MAX_WORKING_VALUE_CHARS: usize = 65_536;
/// Longest working-memory session id or key, in characters.
pub const MAX_WORKING_NAME_CHARS: usize = 256;

/// Session ids and keys within [`MAX_WORKING_NAME_CHARS`].
fn check_working_names(session: &str, key: Option<&str>) -> Result<(), ErrorData> {
    for (field, v) in [("session_id", Some(session)), ("key", key)] {
        if v.is_some_and(|v| v.chars().count() > MAX_WORKING_NAME_CHARS) {
            return Err(to_mcp(&invalid(
                field,
                format!("longer than {MAX_WORKING_NAME_CHARS} characters"),
            )));
        }
    }
    Ok(())
}

/// Server-wide options.
#[derive(Clone, Debug)]
pub struct ServerOptions {
    /// Count search hits as accessed (feeds the access-boost ranking factor). Costs one store
    /// write per search.
    pub record_access: bool,
}

impl Default for ServerOptions {
    fn default() -> Self {
        ServerOptions {
            record_access: true,
        }
    }
}

/// How long shutdown waits for deferred access records beyond the drain deadline.
const ACCESS_FLUSH_GRACE: Duration = Duration::from_secs(5);

/// What every connection shares. Tracks in-flight tool calls so shutdown can wait for them.
#[derive(Debug)]
pub struct ServerState {
    engine: Arc<Engine>,
    working: Arc<dyn WorkingMemory>,
    reflector: Reflector,
    options: ServerOptions,
    in_flight: AtomicUsize,
    idle: Notify,
    profile: Profile,
}

/// Decrements the in-flight count when a call ends (also on panic or cancellation).
struct InFlight<'a>(&'a ServerState);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        if self.0.in_flight.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.0.idle.notify_waiters();
        }
    }
}

impl ServerState {
    pub fn new(
        engine: Arc<Engine>,
        working: Arc<dyn WorkingMemory>,
        reflector: Reflector,
        options: ServerOptions,
    ) -> Self {
        ServerState {
            engine,
            working,
            reflector,
            options,
            in_flight: AtomicUsize::new(0),
            idle: Notify::new(),
            profile: Profile::default(),
        }
    }

    pub fn engine(&self) -> &Arc<Engine> {
        &self.engine
    }

    pub fn store(&self) -> &Arc<dyn Store> {
        self.engine.store()
    }

    /// Per-stage timings of the `memory_search` calls served (since the last reset).
    pub fn profile(&self) -> &Profile {
        &self.profile
    }

    fn enter(&self) -> InFlight<'_> {
        self.in_flight.fetch_add(1, Ordering::AcqRel);
        InFlight(self)
    }

    /// Tool calls currently running.
    pub fn in_flight(&self) -> usize {
        self.in_flight.load(Ordering::Acquire)
    }

    /// Waits (at most `timeout`) for running tool calls to finish, then flushes the store.
    /// Returns how many calls were still running when the wait gave up.
    pub async fn drain_and_flush(&self, timeout: Duration) -> Result<usize, Error> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let idle = self.idle.notified();
            if self.in_flight() == 0 {
                break;
            }
            if tokio::time::timeout_at(deadline, idle).await.is_err() {
                break;
            }
        }
        let left = self.in_flight();
        if left > 0 {
            warn!(
                left,
                "shutdown: calls still running after the drain timeout"
            );
        }
        // Bounded like the drain: a stuck store must not block SIGTERM.
        if tokio::time::timeout_at(deadline + ACCESS_FLUSH_GRACE, self.engine.flush_access())
            .await
            .is_err()
        {
            warn!(
                pending = self.engine.pending_access(),
                "shutdown: access records still unwritten after the grace period; dropping them"
            );
        }
        self.store().flush().await?;
        info!("shutdown: store flushed");
        Ok(left)
    }
}

/// The MCP server handler. Cheap to clone; one per stdio connection or HTTP request.
#[derive(Clone, Debug)]
pub struct HindsightMcp {
    state: Arc<ServerState>,
    /// Access when the request carries none (stdio: the `--namespace` grant; HTTP: nothing, the
    /// auth layer always attaches one).
    default_access: Access,
    tool_router: ToolRouter<Self>,
}

fn mcp<T>(r: Result<T, Error>) -> Result<T, ErrorData> {
    r.map_err(|e| to_mcp(&e))
}

impl HindsightMcp {
    pub fn new(state: Arc<ServerState>, default_access: Access) -> Self {
        HindsightMcp {
            state,
            default_access,
            tool_router: Self::tool_router(),
        }
    }

    /// The tool definitions (name, description, input and output schema).
    pub fn tools(&self) -> Vec<rmcp::model::Tool> {
        self.tool_router.list_all()
    }

    /// The caller's access: the one the HTTP auth layer attached to this request, else the
    /// connection default.
    fn access<'a>(&'a self, ext: &'a Extensions) -> &'a Access {
        ext.get::<axum::http::request::Parts>()
            .and_then(|p| p.extensions.get::<Access>())
            .unwrap_or(&self.default_access)
    }

    fn namespace(
        &self,
        ext: &Extensions,
        requested: Option<&str>,
        write: bool,
    ) -> Result<Namespace, ErrorData> {
        let access = self.access(ext);
        access.resolve(requested, write).map_err(|e| {
            warn!(caller = %access.name, error = %e, "namespace access denied");
            to_mcp(&e)
        })
    }

    /// A search of `ns` for this caller. A caller that may not write `ns` changes nothing by
    /// searching: it records no access (a ranking factor) and the consensus check records no
    /// lesson.
    fn search_request(&self, ext: &Extensions, ns: &Namespace) -> SearchRequest {
        let may_write = self.access(ext).resolve(Some(ns.as_str()), true).is_ok();
        SearchRequest {
            namespace: ns.clone(),
            record_access: self.state.options.record_access && may_write,
            read_only: !may_write,
            ..SearchRequest::default()
        }
    }
}

fn parse_id(id: &str) -> Result<MemoryId, ErrorData> {
    let id = id.trim();
    if hindsight_core::validate_memory_id(id).is_err() {
        return Err(to_mcp(&invalid(
            "id",
            "must be a memory id as returned by memory_store or memory_search",
        )));
    }
    Ok(MemoryId::new(id))
}

#[tool_router]
impl HindsightMcp {
    /// memory_store
    #[tool(
        name = "memory_store",
        description = "Store one long-term memory: a self-contained fact, user preference, rule or lesson (one idea per call). Near-duplicates are not stored twice (the existing id is returned with deduplicated=true); a memory that contradicts an older one supersedes it, unless it comes from a less trusted source (then both are kept). Use reflect_and_store for a finished task, working_memory_set for scratch state of the current session."
    )]
    async fn memory_store(
        &self,
        Parameters(args): Parameters<StoreArgs>,
        ext: Extensions,
    ) -> Result<Json<StoreResult>, ErrorData> {
        let _g = self.state.enter();
        let ns = self.namespace(&ext, args.namespace.as_deref(), true)?;
        let claimed: Source = args.source.map_or(Source::Agent, Into::into);
        let access = self.access(&ext);
        let source = claimed.at_most(access.max_source);
        if source != claimed {
            warn!(caller = %access.name, %claimed, stored_as = %source, "source claim above the caller's max_source");
        }
        let new = NewMemory {
            namespace: ns.clone(),
            kind: args.kind.map_or(MemoryKind::Semantic, Into::into),
            content: args.content,
            tags: args.tags,
            context: args.context,
            entities: args.entities,
            importance: args.importance,
            source,
            ..NewMemory::default()
        };
        let kind = new.kind;
        let (out, timings) = mcp(self.state.engine.store_memory_timed(new, Utc::now()).await)?;
        self.state.profile.record_store(&timings);
        info!(tool = "memory_store", namespace = %ns, id = %out.id, %kind, deduplicated = out.deduplicated,
              superseded = out.superseded.len(), status = %out.status, "stored memory");
        Ok(Json(StoreResult::from_outcome(out, ns.as_str(), source)))
    }

    /// memory_search
    #[tool(
        name = "memory_search",
        description = "Search long-term memory before acting: hybrid vector + keyword + structured retrieval, fused and ranked by recency, importance, trust and usefulness. Returns the best hits (default 5). Hits with failure=true are warnings from earlier failed attempts: do NOT repeat those approaches. stale=true means an old fact that may be outdated. Use filters for hard constraints (kinds, tags, entities, time range, status); set explain=true to see why each hit scored."
    )]
    async fn memory_search(
        &self,
        Parameters(args): Parameters<SearchArgs>,
        ext: Extensions,
    ) -> Result<Json<SearchResult>, ErrorData> {
        let _g = self.state.enter();
        let ns = self.namespace(&ext, args.namespace.as_deref(), false)?;
        let top_k = args.top_k.unwrap_or(5);
        if top_k == 0 || top_k > MAX_TOP_K {
            return Err(to_mcp(&invalid(
                "top_k",
                format!("must be between 1 and {MAX_TOP_K}, got {top_k}"),
            )));
        }
        let filter = mcp(args.filters.unwrap_or_default().to_filter())?;
        let req = SearchRequest {
            query: args.query,
            top_k: top_k as usize,
            filter,
            now: None,
            ..self.search_request(&ext, &ns)
        };
        let (resp, timings) = mcp(self.state.engine.search_timed(&req).await)?;
        self.state.profile.record(&timings);
        let hits: Vec<HitOut> = resp
            .hits
            .into_iter()
            .map(|h| HitOut::from_hit(h, args.explain))
            .collect();
        info!(tool = "memory_search", namespace = %ns, query = %req.query, top_k, hits = hits.len(),
              ids = ?hits.iter().map(|h| h.memory.id.as_str()).collect::<Vec<_>>(), "searched");
        Ok(Json(SearchResult {
            count: hits.len(),
            hits,
        }))
    }

    /// memory_update
    #[tool(
        name = "memory_update",
        description = "Change fields of an existing memory by id (content, context, tags, entities, importance, kind). Only the fields you pass change; tags and entities are replaced as a whole. Changing content or context re-indexes the memory and applies the write rules: an update that would copy another active memory is refused (conflict), and memories the new text contradicts are superseded. Prefer storing a new memory when the world changed (the old one is superseded and kept for history); use update to correct a mistake."
    )]
    async fn memory_update(
        &self,
        Parameters(args): Parameters<UpdateArgs>,
        ext: Extensions,
    ) -> Result<Json<MemoryResult>, ErrorData> {
        let _g = self.state.enter();
        let ns = self.namespace(&ext, args.namespace.as_deref(), true)?;
        let id = parse_id(&args.id)?;
        if let Some(c) = &args.content {
            let n = c.chars().count();
            let max = self.state.engine.write_config().max_content_chars;
            if n > max {
                return Err(to_mcp(&invalid(
                    "content",
                    format!("{n} characters exceeds the limit of {max}"),
                )));
            }
        }
        let patch = args.to_patch();
        // New text is stored at no more than the caller's trust (see `max_source`).
        let writer = self.access(&ext).max_source;
        let m = mcp(self.state.engine.update_as(&ns, &id, &patch, writer).await)?;
        info!(tool = "memory_update", namespace = %ns, %id, "updated memory");
        Ok(Json(MemoryResult { memory: m.into() }))
    }

    /// memory_forget
    #[tool(
        name = "memory_forget",
        description = "Forget a memory by id (soft delete): it stops appearing in searches but is kept, with your reason, for audit and can be restored by an operator. Use it for memories that are wrong, obsolete or that the user asked to forget. A reason is required."
    )]
    async fn memory_forget(
        &self,
        Parameters(args): Parameters<ForgetArgs>,
        ext: Extensions,
    ) -> Result<Json<ForgetResult>, ErrorData> {
        let _g = self.state.enter();
        let ns = self.namespace(&ext, args.namespace.as_deref(), true)?;
        let id = parse_id(&args.id)?;
        let m = mcp(self.state.engine.forget(&ns, &id, &args.reason).await)?;
        info!(tool = "memory_forget", namespace = %ns, %id, reason = %args.reason, "forgot memory");
        Ok(Json(ForgetResult {
            id: m.id.0,
            status: m.status.into(),
            reason: args.reason,
        }))
    }

    /// memory_feedback
    #[tool(
        name = "memory_feedback",
        description = "Tell the memory whether a recalled memory actually helped (useful=true) or was irrelevant/wrong (useful=false). Feedback adjusts its future ranking. Call it after using a memory_search hit."
    )]
    async fn memory_feedback(
        &self,
        Parameters(args): Parameters<FeedbackArgs>,
        ext: Extensions,
    ) -> Result<Json<FeedbackResult>, ErrorData> {
        let _g = self.state.enter();
        let ns = self.namespace(&ext, args.namespace.as_deref(), true)?;
        let id = parse_id(&args.id)?;
        let m = mcp(self.state.engine.feedback(&ns, &id, args.useful).await)?;
        info!(tool = "memory_feedback", namespace = %ns, %id, useful = args.useful, usefulness = m.usefulness, "feedback");
        Ok(Json(FeedbackResult {
            id: m.id.0,
            usefulness: m.usefulness,
        }))
    }

    /// memory_summarize
    #[tool(
        name = "memory_summarize",
        description = "Compress recalled memories into ONE short experience hint (at most max_chars, default 400) to put in your context instead of many raw memories. Give either ids (from memory_search) or a query (its top hits are summarised). Failures come first as 'Avoid: ...'. Extractive (no model) unless the server has a model configured."
    )]
    async fn memory_summarize(
        &self,
        Parameters(args): Parameters<SummarizeArgs>,
        ext: Extensions,
    ) -> Result<Json<SummarizeResult>, ErrorData> {
        let _g = self.state.enter();
        let ns = self.namespace(&ext, args.namespace.as_deref(), false)?;
        let max_chars = args.max_chars.unwrap_or(400);
        if !(40..=4000).contains(&max_chars) {
            return Err(to_mcp(&invalid(
                "max_chars",
                format!("must be between 40 and 4000, got {max_chars}"),
            )));
        }
        let memories = match (&args.ids, &args.query) {
            (Some(ids), None) => {
                if ids.is_empty() || ids.len() > 50 {
                    return Err(to_mcp(&invalid("ids", "give between 1 and 50 ids")));
                }
                let ids: Vec<MemoryId> =
                    ids.iter().map(|i| parse_id(i)).collect::<Result<_, _>>()?;
                let found = mcp(self.state.store().get_many(&ns, &ids).await)?;
                let mut ordered = Vec::with_capacity(ids.len());
                for id in &ids {
                    match found.iter().find(|m| &m.id == id) {
                        // Quarantined and forgotten memories are never read back.
                        Some(m) if matches!(m.status, Status::Quarantined | Status::Forgotten) => {
                            return Err(to_mcp(&invalid(
                                "ids",
                                format!("memory {id} is {}: it cannot be summarised", m.status),
                            )));
                        }
                        Some(m) => ordered.push(m.clone()),
                        None => {
                            return Err(to_mcp(&Error::not_found(format!(
                                "memory {id} in namespace {ns}"
                            ))));
                        }
                    }
                }
                ordered
            }
            (None, Some(query)) => {
                let top_k = args.top_k.unwrap_or(5);
                if top_k == 0 || top_k > 20 {
                    return Err(to_mcp(&invalid(
                        "top_k",
                        format!("must be between 1 and 20, got {top_k}"),
                    )));
                }
                let req = SearchRequest {
                    query: query.clone(),
                    top_k: top_k as usize,
                    ..self.search_request(&ext, &ns)
                };
                mcp(self.state.engine.search(&req).await)?
                    .hits
                    .into_iter()
                    .map(|h| h.memory)
                    .collect()
            }
            _ => {
                return Err(to_mcp(&invalid(
                    "ids",
                    "give exactly one of `ids` or `query`",
                )));
            }
        };
        let items: Vec<Recalled> = memories
            .iter()
            .map(|m| Recalled {
                id: m.id.0.clone(),
                content: m.content.clone(),
                failure: m.is_failure(),
            })
            .collect();
        let reflector = self.state.reflector.clone();
        let summary =
            tokio::task::spawn_blocking(move || reflector.summarize(&items, max_chars as usize))
                .await
                .map_err(|e| to_mcp(&Error::backend(format!("summary task failed: {e}"))))?;
        info!(tool = "memory_summarize", namespace = %ns, sources = summary.sources.len(),
              method = ?summary.method, chars = summary.hint.chars().count(), "summarised");
        Ok(Json(SummarizeResult {
            hint: summary.hint,
            method: method_name(summary.method).into(),
            sources: summary.sources,
            truncated: summary.truncated,
            model_error: summary.error,
        }))
    }

    /// reflect_and_store
    #[tool(
        name = "reflect_and_store",
        description = "Call once when a task ends. Give the goal, the steps you took (in order, errors verbatim) and the outcome (success, partial, failure, aborted). The server reflects on the trace — task type, up to 3 key decisions, one lesson — and stores it as an episode. Failed or aborted tasks are stored as warnings so future searches flag them. The trace is never dropped: if reflection fails the raw trace is stored tagged reflection_failed (cut to the content limit when longer; truncated=true then)."
    )]
    async fn reflect_and_store(
        &self,
        Parameters(args): Parameters<ReflectArgs>,
        ext: Extensions,
    ) -> Result<Json<ReflectResult>, ErrorData> {
        let _g = self.state.enter();
        let ns = self.namespace(&ext, args.namespace.as_deref(), true)?;
        if args.goal.trim().is_empty() {
            return Err(to_mcp(&invalid("goal", "must not be empty")));
        }
        if args.steps.len() > MAX_STEPS {
            return Err(to_mcp(&invalid(
                "steps",
                format!("at most {MAX_STEPS} steps, got {}", args.steps.len()),
            )));
        }
        let max = self.state.engine.write_config().max_content_chars;
        if args.goal.chars().count() > max {
            return Err(to_mcp(&invalid(
                "goal",
                format!("longer than {max} characters"),
            )));
        }
        if let Some(i) = args.steps.iter().position(|s| s.chars().count() > max) {
            return Err(to_mcp(&invalid(
                "steps",
                format!("step {} is longer than {max} characters", i + 1),
            )));
        }
        // Every field the client sent is checked before the (possibly slow) reflection, with
        // room for the two tags the server adds, so no work is done for a write that would be
        // refused.
        let labels = self.state.engine.write_config().max_labels;
        if args.tags.len() + 2 > labels {
            return Err(to_mcp(&invalid(
                "tags",
                format!(
                    "at most {} tags (the server adds `reflection` and maybe `reflection_failed`), got {}",
                    labels.saturating_sub(2),
                    args.tags.len()
                ),
            )));
        }
        let mut provisional = NewMemory::new(ns.as_str(), MemoryKind::Episodic, &args.goal);
        provisional.tags = args.tags.clone();
        provisional.context = args.context.clone().unwrap_or_default();
        provisional.entities = args.entities.clone();
        provisional.task_id = args.task_id.clone();
        mcp(self.state.engine.validate_new(&provisional))?;
        let trace = TaskTrace {
            goal: args.goal.clone(),
            steps: args.steps,
            outcome: args.outcome.into(),
            entities: args.entities,
        };
        let reflector = self.state.reflector.clone();
        let reflection = tokio::task::spawn_blocking(move || reflector.reflect(&trace))
            .await
            .map_err(|e| to_mcp(&Error::backend(format!("reflection task failed: {e}"))))?;
        let mut tags = args.tags;
        tags.push("reflection".into());
        if reflection.reflection_failed {
            tags.push("reflection_failed".into());
        }
        let max = self.state.engine.write_config().max_content_chars;
        let (content, truncated) = clip_chars(&reflection.content, max);
        let ep = &reflection.episode;
        let new = NewMemory {
            namespace: ns.clone(),
            kind: MemoryKind::Episodic,
            content,
            tags,
            context: args.context.unwrap_or_else(|| args.goal.clone()),
            entities: ep.entities.clone(),
            // An episode is the agent's account, capped like any write (`max_source`).
            source: Source::Agent.at_most(self.access(&ext).max_source),
            task_id: args.task_id,
            task_type: Some(ep.task_type),
            outcome: Some(ep.outcome),
            ..NewMemory::default()
        };
        let out = mcp(self.state.engine.store_memory(new, Utc::now()).await)?;
        let kind = if ep.outcome.is_failure() {
            MemoryKind::Warning
        } else {
            MemoryKind::Episodic
        };
        info!(tool = "reflect_and_store", namespace = %ns, id = %out.id, %kind, task_type = %ep.task_type,
              outcome = %ep.outcome, method = ?reflection.method, failed = reflection.reflection_failed, "stored episode");
        Ok(Json(ReflectResult {
            id: out.id.0,
            kind: kind.into(),
            task_type: ep.task_type.into(),
            outcome: ep.outcome.into(),
            key_decisions: ep.key_decisions.clone(),
            lesson: ep.lesson.clone(),
            entities: ep.entities.clone(),
            method: method_name(reflection.method).into(),
            reflection_failed: reflection.reflection_failed,
            model_error: reflection.error,
            deduplicated: out.deduplicated,
            truncated,
        }))
    }

    /// working_memory_set
    #[tool(
        name = "working_memory_set",
        description = "Set a key in the scratchpad of one session (current plan, intermediate results, user's stated goal for this conversation). Short-lived: pass ttl_seconds to expire it automatically. Not searchable and not long-term: store lasting facts with memory_store."
    )]
    async fn working_memory_set(
        &self,
        Parameters(args): Parameters<WorkingSetArgs>,
        ext: Extensions,
    ) -> Result<Json<WorkingEntryOut>, ErrorData> {
        let _g = self.state.enter();
        let ns = self.namespace(&ext, args.namespace.as_deref(), true)?;
        check_working_names(&args.session_id, Some(&args.key))?;
        let n = args.value.chars().count();
        if n > MAX_WORKING_VALUE_CHARS {
            return Err(to_mcp(&invalid(
                "value",
                format!("{n} characters exceeds the limit of {MAX_WORKING_VALUE_CHARS}"),
            )));
        }
        let ttl = match args.ttl_seconds {
            Some(0) => return Err(to_mcp(&invalid("ttl_seconds", "must be at least 1"))),
            Some(s) if s > 365 * 24 * 3600 => {
                return Err(to_mcp(&invalid("ttl_seconds", "at most one year")));
            }
            Some(s) => Some(Duration::from_secs(s)),
            None => None,
        };
        let e = mcp(self
            .state
            .working
            .set(&ns, &args.session_id, &args.key, &args.value, ttl)
            .await)?;
        info!(tool = "working_memory_set", namespace = %ns, session = %args.session_id, key = %args.key, ttl = ?args.ttl_seconds, "set");
        Ok(Json(e.into()))
    }

    /// working_memory_get
    #[tool(
        name = "working_memory_get",
        description = "Read the session scratchpad: one key, or every live key of the session when key is omitted. Expired entries are never returned."
    )]
    async fn working_memory_get(
        &self,
        Parameters(args): Parameters<WorkingGetArgs>,
        ext: Extensions,
    ) -> Result<Json<WorkingGetResult>, ErrorData> {
        let _g = self.state.enter();
        let ns = self.namespace(&ext, args.namespace.as_deref(), false)?;
        check_working_names(&args.session_id, args.key.as_deref())?;
        let entries = match &args.key {
            Some(k) => mcp(self.state.working.get(&ns, &args.session_id, k).await)?
                .into_iter()
                .collect(),
            None => mcp(self.state.working.get_all(&ns, &args.session_id).await)?,
        };
        info!(tool = "working_memory_get", namespace = %ns, session = %args.session_id, key = ?args.key, found = entries.len(), "get");
        Ok(Json(WorkingGetResult {
            entries: entries.into_iter().map(Into::into).collect(),
        }))
    }

    /// working_memory_clear
    #[tool(
        name = "working_memory_clear",
        description = "Delete one key of the session scratchpad, or the whole session when key is omitted (call it when the session ends). Returns how many entries were removed."
    )]
    async fn working_memory_clear(
        &self,
        Parameters(args): Parameters<WorkingClearArgs>,
        ext: Extensions,
    ) -> Result<Json<WorkingClearResult>, ErrorData> {
        let _g = self.state.enter();
        let ns = self.namespace(&ext, args.namespace.as_deref(), true)?;
        check_working_names(&args.session_id, args.key.as_deref())?;
        let removed = mcp(self
            .state
            .working
            .clear(&ns, &args.session_id, args.key.as_deref())
            .await)?;
        info!(tool = "working_memory_clear", namespace = %ns, session = %args.session_id, key = ?args.key, removed, "clear");
        Ok(Json(WorkingClearResult { removed }))
    }
}

fn method_name(m: Method) -> &'static str {
    match m {
        Method::Rules => "rules",
        Method::Llm => "llm",
        Method::Extractive => "extractive",
    }
}

/// `s` cut to at most `max` characters, ending with a note when cut; and whether it was.
fn clip_chars(s: &str, max: usize) -> (String, bool) {
    if s.chars().count() <= max {
        return (s.to_owned(), false);
    }
    const NOTE: &str = "\n…(truncated)";
    let keep = max.saturating_sub(NOTE.chars().count());
    let mut out: String = s.chars().take(keep).collect();
    out.push_str(NOTE);
    (out, true)
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for HindsightMcp {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("hindsight", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "hindsight is your long-term memory. Before a task, memory_search for relevant facts and past failures (failure=true hits: do not repeat them). Store durable facts with memory_store; when a task ends call reflect_and_store; keep per-session scratch state with working_memory_*. Give memory_feedback on hits you used.",
            )
    }

    /// rmcp hands over every request whose method it does not know, and also a known method
    /// whose params do not parse (`tools/call` with `arguments: [1, 2]`); its default answers
    /// both with -32601 and the bare method name. A known method here means bad params: -32602.
    async fn on_custom_request(
        &self,
        request: CustomRequest,
        _context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, ErrorData> {
        let method = request.method;
        if method == "tools/call" {
            return Err(ErrorData::invalid_params(
                "invalid params for `tools/call`: expected {\"name\": string, \"arguments\": object}",
                None,
            ));
        }
        if MCP_CLIENT_METHODS.contains(&method.as_str()) {
            return Err(ErrorData::invalid_params(
                format!(
                    "invalid params for `{method}`: not the shape the MCP specification gives it"
                ),
                None,
            ));
        }
        Err(ErrorData::new(
            ErrorCode::METHOD_NOT_FOUND,
            format!("method not found: `{method}`"),
            None,
        ))
    }
}

/// The request methods a client may send (MCP specification, as rmcp 3.11 models them).
const MCP_CLIENT_METHODS: &[&str] = &[
    "initialize",
    "ping",
    "server/discover",
    "completion/complete",
    "logging/setLevel",
    "prompts/get",
    "prompts/list",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "resources/subscribe",
    "resources/unsubscribe",
    "resources/directory/read",
    "subscriptions/listen",
    "tools/list",
    "tools/call",
    "tasks/get",
    "tasks/update",
    "tasks/cancel",
    "skills/list",
    "skills/get",
];
