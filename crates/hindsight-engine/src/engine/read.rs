//! The read path: every path's candidates for a query, and the searches that rank them.

use super::*;

impl Engine {
    /// Runs the three paths and collects their raw candidates (`depth` per path).
    pub async fn candidates(
        &self,
        req: &SearchRequest,
        depth: usize,
        config: &RetrievalConfig,
    ) -> Result<Candidates> {
        self.candidates_timed(req, depth, config, &mut SearchTimings::default())
            .await
    }

    pub(super) async fn candidates_timed(
        &self,
        req: &SearchRequest,
        depth: usize,
        config: &RetrievalConfig,
        timings: &mut SearchTimings,
    ) -> Result<Candidates> {
        if req.filter.statuses.contains(&Status::Quarantined) {
            return Err(Error::invalid(
                "filter.statuses",
                "quarantined memories are never returned by search; list them with `hindsight quarantine list`",
            ));
        }
        let setup = Instant::now();
        let now = req.now.unwrap_or_else(Utc::now);
        let ns = &req.namespace;
        let filter = &without_lessons(req.filter.clone());
        let understanding = understand(&req.query, now);
        let mut lists: [PathHits; 3] = Default::default();
        // The query embedding (the slowest step when not cached) runs on the blocking pool while
        // the keyword and structured paths run.
        let embedding = config
            .vector
            .then(|| self.start_query_embedding(&req.query));
        // The keyword and structured paths run as their own tasks, so on a multi-threaded
        // runtime they use the other core while this one waits for the embedding and runs the
        // vector search.
        let keyword = config.keyword.then(|| {
            let (store, ns, query, filter) = (
                self.store.clone(),
                ns.clone(),
                req.query.clone(),
                filter.clone(),
            );
            spawn_path(async move { store.keyword_search(&ns, &query, depth, &filter).await })
        });
        let structured = (config.structured && !understanding.structured.is_empty()).then(|| {
            let (store, ns, query, filter) = (
                self.store.clone(),
                ns.clone(),
                understanding.structured.clone(),
                filter.clone(),
            );
            spawn_path(async move { store.structured_search(&ns, &query, depth, &filter).await })
        });
        timings.setup = setup.elapsed();
        if let Some(embedding) = embedding {
            let t = Instant::now();
            let (q, took, cached) = embedding.finish_timed().await;
            (
                timings.embedding_wait,
                timings.embedding,
                timings.embedding_cached,
            ) = (t.elapsed(), took, cached);
            let q = q?;
            let t = Instant::now();
            lists[0] = self.store.vector_search(ns, &q, depth, filter).await?;
            timings.vector = t.elapsed();
        }
        let t = Instant::now();
        let waited = keyword.is_some() || structured.is_some();
        if let Some(task) = keyword {
            (lists[1], timings.keyword) = task.join("keyword").await?;
        }
        if let Some(task) = structured {
            (lists[2], timings.structured) = task.join("structured").await?;
        }
        if waited {
            timings.paths_wait = t.elapsed();
        }
        let t = Instant::now();
        let mut ids: Vec<MemoryId> = lists.iter().flatten().map(|h| h.id.clone()).collect();
        ids.sort();
        ids.dedup();
        // Checked against the filter again: a memory forgotten, quarantined or changed after the
        // paths found it is not returned in its new state. What an operator discarded from
        // quarantine stays out, even for a search that asks for forgotten memories, so search
        // and the harness's `Candidates::rank` score the same memories.
        let memories = self
            .store
            .get_many(ns, &ids)
            .await?
            .into_iter()
            .filter(|m| filter.matches(m) && !crate::quarantine::is_discarded(m))
            .map(|m| (m.id.clone(), m))
            .collect();
        timings.fetch = t.elapsed();
        for p in PathKind::ALL {
            let top: Vec<(&str, f32)> = lists[p.index()]
                .iter()
                .take(10)
                .map(|h| (h.id.as_str(), h.score))
                .collect();
            debug!(path = %p, query = %req.query, hits = lists[p.index()].len(), ?top, "path results");
        }
        Ok(Candidates {
            lists,
            memories,
            understanding,
            now,
        })
    }

    /// The read pipeline with the engine's retrieval config.
    pub async fn search(&self, req: &SearchRequest) -> Result<SearchResponse> {
        self.search_with(req, &self.retrieval).await
    }

    /// The read pipeline with an explicit retrieval config.
    pub async fn search_with(
        &self,
        req: &SearchRequest,
        config: &RetrievalConfig,
    ) -> Result<SearchResponse> {
        Ok(self.search_with_timed(req, config).await?.0)
    }

    /// The read pipeline with the engine's retrieval config, also returning where the time went
    /// (the server's per-stage profile).
    pub async fn search_timed(
        &self,
        req: &SearchRequest,
    ) -> Result<(SearchResponse, SearchTimings)> {
        self.search_with_timed(req, &self.retrieval).await
    }

    /// [`Engine::search_with`], also returning where the time went.
    pub async fn search_with_timed(
        &self,
        req: &SearchRequest,
        config: &RetrievalConfig,
    ) -> Result<(SearchResponse, SearchTimings)> {
        let started = Instant::now();
        let mut timings = SearchTimings::default();
        if req.query.trim().is_empty() {
            return Err(Error::invalid("query", "must not be empty"));
        }
        let query_chars = req.query.chars().count();
        if query_chars > MAX_QUERY_CHARS {
            return Err(Error::invalid(
                "query",
                format!("{query_chars} characters; at most {MAX_QUERY_CHARS}"),
            ));
        }
        if req.top_k > MAX_TOP_K {
            return Err(Error::invalid(
                "top_k",
                format!("must be at most {MAX_TOP_K}, got {}", req.top_k),
            ));
        }
        if let Some(now) = req.now {
            // Refused before any work: the search would run, then fail recording access.
            hindsight_core::storable_nanos("now", now)?;
        }
        let top_k = if req.top_k == 0 { 5 } else { req.top_k };
        let depth = config.depth(top_k);
        let cands = self
            .candidates_timed(req, depth, config, &mut timings)
            .await?;
        let t = Instant::now();
        let ranked = cands.rank(config, depth);
        let mut hits = Vec::with_capacity(top_k);
        for r in ranked {
            if hits.len() >= top_k {
                break;
            }
            let Some(memory) = cands.memories.get(&r.fused.id).cloned() else {
                continue;
            };
            let half_life = config
                .factors
                .decay
                .unwrap_or_default()
                .half_life(memory.kind);
            let stale = memory.kind == MemoryKind::Semantic
                && decay::age_days(memory.created_at, cands.now) > 2.0 * half_life;
            let paths = PathKind::ALL
                .into_iter()
                .filter_map(|p| {
                    r.fused.path(p).map(|c| PathEvidence {
                        path: p,
                        rank: c.rank,
                        raw_score: c.raw,
                        normalized: c.normalized,
                    })
                })
                .collect();
            hits.push(SearchHit {
                failure: memory.is_failure(),
                suspect: memory.is_suspect(),
                stale,
                found_by: r.fused.found_by(),
                score: r.score,
                explanation: Explanation {
                    paths,
                    fused_score: r.fused.score,
                    factors: r.factors,
                },
                memory,
                consensus: None,
            });
        }
        timings.rank = t.elapsed();
        if let Some(check) = &self.consensus {
            let t = Instant::now();
            self.flag_consensus(
                check.as_ref(),
                &req.namespace,
                &mut hits,
                cands.now,
                !req.read_only,
            )
            .await?;
            timings.consensus = t.elapsed();
        }
        let fused: Vec<(&str, f64)> = hits
            .iter()
            .map(|h| (h.memory.id.as_str(), h.score))
            .collect();
        debug!(query = %req.query, ?fused, "fused result");
        if req.record_access && !hits.is_empty() {
            let t = Instant::now();
            let ids: Vec<MemoryId> = hits.iter().map(|h| h.memory.id.clone()).collect();
            match &self.access_log {
                Some(log) => log.record(&req.namespace, ids, cands.now),
                None => {
                    self.store
                        .record_access(&req.namespace, &ids, cands.now)
                        .await?
                }
            }
            timings.access = t.elapsed();
        }
        timings.total = started.elapsed();
        Ok((
            SearchResponse {
                hits,
                understanding: cands.understanding,
            },
            timings,
        ))
    }
}
