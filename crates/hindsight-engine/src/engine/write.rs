//! The write path: placing a write among similar memories (duplicates, conflicts), embedding
//! and screening, conversation neighbourhoods, `store_memory` and the bulk `import`.

use super::*;

impl Engine {
    /// Where a write of `content` (kind `kind`, vector `vector`) goes among the similar memories
    /// of its namespace (`exclude`: its own id, when it is already stored). Per similar memory
    /// (cosine >= `conflict_threshold`): one about another subject ([`distinct_subjects`]) is
    /// only related; else the judge decides. The most similar same-subject memory at or above
    /// `dedup_threshold` that the write does not contradict (or that has the very same text) is
    /// its duplicate. A contradiction supersedes the older memory unless the write comes from a
    /// less trusted source (external text cannot retire what the user said): then both stay,
    /// related, and the read-time consensus check weighs them. A memory the guard suspects
    /// absorbs only a write that is itself suspect and says the very same words
    /// (`new_suspect`).
    pub(crate) async fn place(
        &self,
        new: &NewMemory,
        kind: MemoryKind,
        content: &str,
        vector: &[f32],
        exclude: &[MemoryId],
        new_suspect: bool,
    ) -> Result<Placement> {
        let ns = &new.namespace;
        // Guard lessons are the consensus check's records, not memories a write can merge into
        // or retire: a write close to one would otherwise be deduplicated into a hidden lesson,
        // or retire it for good (it is recorded only once per flagged memory).
        let filter = without_lessons(Filter {
            kinds: vec![kind],
            ..Filter::default()
        });
        let similar = self
            .store
            .vector_search(ns, vector, self.write.conflict_candidates.max(1), &filter)
            .await?;
        let band: Vec<_> = similar
            .iter()
            .filter(|h| !exclude.contains(&h.id) && h.score >= self.write.conflict_threshold)
            .collect();
        if band.is_empty() {
            return Ok(Placement::default());
        }
        let ids: Vec<MemoryId> = band.iter().map(|h| h.id.clone()).collect();
        let olds = self.store.get_many(ns, &ids).await?;
        let judged: Vec<(&Memory, bool, ConflictDecision)> = olds
            .iter()
            .filter_map(|old| {
                let hit = band.iter().find(|h| h.id == old.id)?;
                if distinct_subjects(old, new, content) {
                    return Some((old, true, ConflictDecision::Supplement));
                }
                Some((old, false, self.judge.judge(old, content, hit.score)))
            })
            .collect();
        let duplicate = band.iter().find(|h| {
            h.score >= self.write.dedup_threshold
                && judged.iter().any(|(m, distinct, d)| {
                    // A memory the guard flagged as suspect absorbs no clean write: one that
                    // restates it is kept as its own, unflagged memory. A suspect repeat of it
                    // adds nothing and is dropped.
                    let same = same_words(&m.content, content);
                    m.id == h.id
                        && !distinct
                        && (!m.is_suspect() || (new_suspect && same))
                        && (*d == ConflictDecision::Supplement || same)
                })
        });
        if let Some(top) = duplicate {
            return Ok(Placement {
                duplicate_of: Some(top.id.clone()),
                ..Placement::default()
            });
        }
        let trust = &self.consensus_config.trust;
        let mut placement = Placement::default();
        for (old, _, decision) in &judged {
            match decision {
                ConflictDecision::Contradict => {
                    // Whichever of the two is dated later speaks last, as when they arrive in
                    // date order; a less trusted later one cannot retire the other.
                    let (new_trust, old_trust) =
                        (trust.weight(new.source), trust.weight(old.source));
                    if new.created_at.is_some_and(|t| t < old.created_at) {
                        if old_trust >= new_trust {
                            placement.newer.push(old.id.clone());
                        } else {
                            info!(namespace = %ns, existing = %old.id, source = %new.source, "an earlier, more trusted write contradicts a later memory: kept both");
                            placement.related.push(old.id.clone());
                        }
                    } else if new_trust >= old_trust {
                        placement.superseded.push(old.id.clone());
                    } else {
                        info!(namespace = %ns, existing = %old.id, source = %new.source, "a less trusted write contradicts a memory: kept both");
                        placement.related.push(old.id.clone());
                    }
                }
                ConflictDecision::Supplement => placement.related.push(old.id.clone()),
            }
        }
        Ok(placement)
    }

    pub(crate) fn materialize(
        &self,
        new: &NewMemory,
        id: MemoryId,
        content: String,
        status: Status,
        reason: Option<String>,
        now: DateTime<Utc>,
    ) -> Memory {
        let created_at = new.created_at.unwrap_or(now);
        let importance = new.resolved_importance(self.write.default_importance);
        let kind = stored_kind(new);
        Memory {
            id,
            namespace: new.namespace.clone(),
            kind,
            content,
            tags: new.tags.clone(),
            context: new.context.clone(),
            entities: new.entities.clone(),
            importance,
            source: new.source,
            created_at,
            last_accessed_at: created_at,
            access_count: 0,
            usefulness: 0.0,
            status,
            status_reason: reason,
            superseded_by: None,
            task_id: new.task_id.clone(),
            task_type: new.task_type,
            outcome: new.outcome,
            embedding_model: self.embedder.space().model,
            neighbourhood: String::new(),
        }
    }

    /// Embeds one index text off the async runtime.
    pub(crate) async fn embed_one_document(&self, text: String) -> Result<Vec<f32>> {
        self.embed_documents(vec![text])
            .await?
            .pop()
            .ok_or_else(|| embed_err("embedder returned no vector"))
    }

    /// Embeds each write's index text and runs the guard on it with its vector, in one task on
    /// the blocking pool: the embedder runs a model and the guard may run one too (the intent
    /// head's forward pass), and neither may hold an async worker while it does.
    ///
    /// `neighbourhoods[i]` is write `i`'s conversational neighbourhood (empty for none): the
    /// stored vector embeds it with the write's text, the guard judges the write's own text and
    /// its own vector (one more embedding for a write with a neighbourhood).
    pub(super) async fn embed_and_screen(
        &self,
        writes: Vec<NewMemory>,
        neighbourhoods: Vec<String>,
    ) -> Result<Screened> {
        let embedder = self.embedder.clone();
        let guard = self.guard.clone();
        tokio::task::spawn_blocking(move || {
            let own: Vec<String> = writes
                .iter()
                .map(|n| index_text(&n.content, &n.context))
                .collect();
            // The texts to embed: every write's own text, then the windowed text of each write
            // with a neighbourhood.
            let mut texts: Vec<&str> = own.iter().map(String::as_str).collect();
            let windowed: Vec<(usize, String)> = neighbourhoods
                .iter()
                .enumerate()
                .filter(|(_, n)| !n.is_empty())
                .map(|(i, n)| (i, format!("{n}\n{}", own[i])))
                .collect();
            texts.extend(windowed.iter().map(|(_, t)| t.as_str()));
            let mut all = embedder.embed(&texts).map_err(embed_err)?;
            if all.len() != texts.len() {
                return Err(embed_err(format!(
                    "embedder returned {} vectors for {} texts",
                    all.len(),
                    texts.len()
                )));
            }
            let windowed_vectors = all.split_off(writes.len());
            let own_vectors = all;
            let mut vectors = own_vectors.clone();
            for ((i, _), v) in windowed.iter().zip(windowed_vectors) {
                vectors[*i] = v;
            }
            let guard_started = Instant::now();
            let batch: Vec<(&NewMemory, Option<&[f32]>)> = writes
                .iter()
                .zip(&own_vectors)
                .map(|(n, v)| (n, Some(v.as_slice())))
                .collect();
            let decisions = guard.check_batch(&batch);
            if decisions.len() != writes.len() {
                return Err(Error::backend(format!(
                    "guard returned {} decisions for {} writes",
                    decisions.len(),
                    writes.len()
                )));
            }
            let guard = guard_started.elapsed();
            Ok(Screened {
                writes,
                vectors,
                decisions,
                guard,
            })
        })
        .await
        .map_err(|e| Error::backend(format!("embedding task failed: {e}")))?
    }

    /// The neighbourhood of a write that names its conversation: the contents of the
    /// conversation's [`WriteConfig::conversation_window`] latest active turns dated before it,
    /// oldest first (empty for a write outside a conversation).
    pub(super) async fn neighbourhood_of(
        &self,
        new: &NewMemory,
        now: DateTime<Utc>,
    ) -> Result<String> {
        let turns = self
            .stored_turns(
                &new.namespace,
                &new.entities,
                &new.tags,
                new.created_at.unwrap_or(now),
            )
            .await?;
        Ok(neighbourhood_text(turns.iter().map(String::as_str)))
    }

    /// The contents of the [`WriteConfig::conversation_window`] latest active turns stored in
    /// the conversation that `entities` and `tags` name, dated before `before`, oldest first.
    pub(super) async fn stored_turns(
        &self,
        namespace: &Namespace,
        entities: &BTreeMap<String, String>,
        tags: &[String],
        before: DateTime<Utc>,
    ) -> Result<Vec<String>> {
        let k = self.write.conversation_window;
        let Some(conversation) = conversation_of(entities, tags).filter(|_| k > 0) else {
            return Ok(Vec::new());
        };
        let mut query = StructuredQuery::default();
        let mut filter = Filter {
            created: Some(TimeRange {
                start: DateTime::<Utc>::MIN_UTC,
                end: before,
            }),
            ..Filter::default()
        };
        match conversation.strip_prefix("session=") {
            Some(v) if entities.contains_key("session") => {
                query.entities.insert("session".into(), v.to_owned());
                filter.entities.insert("session".into(), v.to_owned());
            }
            _ => {
                query.tags.push(conversation.clone());
                filter.tags.push(conversation);
            }
        }
        let filter = without_lessons(filter);
        let hits = self
            .store
            .structured_search(namespace, &query, k, &filter)
            .await?;
        let ids: Vec<MemoryId> = hits.into_iter().map(|h| h.id).collect();
        let mut turns = self.store.get_many(namespace, &ids).await?;
        turns.sort_by(|a, b| {
            a.created_at
                .cmp(&b.created_at)
                .then_with(|| a.id.cmp(&b.id))
        });
        Ok(turns.into_iter().map(|m| m.content).collect())
    }

    /// [`Engine::embed_and_screen`] for one write: the write back, its vector, the guard's
    /// decision and the write's neighbourhood (`known`, or looked up in its conversation).
    pub(super) async fn embed_and_screen_one(
        &self,
        write: NewMemory,
        known: Option<String>,
        now: DateTime<Utc>,
        timings: &mut StoreTimings,
    ) -> Result<(NewMemory, Vec<f32>, GuardDecision, String)> {
        let started = Instant::now();
        let neighbourhood = match known {
            Some(n) => n,
            None => self.neighbourhood_of(&write, now).await?,
        };
        let s = self
            .embed_and_screen(vec![write], vec![neighbourhood.clone()])
            .await?;
        // The wait for a blocking thread counts as embedding, as it did when the embedding was
        // a task of its own: the stages still add up to the write's wall time.
        timings.guard += s.guard;
        timings.embedding += started.elapsed().saturating_sub(s.guard);
        match (
            s.writes.into_iter().next(),
            s.vectors.into_iter().next(),
            s.decisions.into_iter().next(),
        ) {
            (Some(w), Some(v), Some(d)) => Ok((w, v, d, neighbourhood)),
            _ => Err(embed_err("embedder returned no vector")),
        }
    }

    /// A quarantined memory with the very same content, context, kind, source, tags and entities
    /// as `new` (among the 10 nearest quarantined vectors).
    pub(super) async fn held_copy(
        &self,
        new: &NewMemory,
        content: &str,
        vector: &[f32],
    ) -> Result<Option<MemoryId>> {
        let filter = Filter {
            statuses: vec![Status::Quarantined],
            ..Filter::default()
        };
        let near = self
            .store
            .vector_search(&new.namespace, vector, 10, &filter)
            .await?;
        let ids: Vec<MemoryId> = near
            .iter()
            .filter(|h| h.score >= 0.999)
            .map(|h| h.id.clone())
            .collect();
        if ids.is_empty() {
            return Ok(None);
        }
        Ok(self
            .store
            .get_many(&new.namespace, &ids)
            .await?
            .into_iter()
            .find(|m| {
                m.status == Status::Quarantined
                    && m.content == content
                    && m.context == new.context
                    && m.kind == stored_kind(new)
                    && m.source == new.source
                    && m.tags == new.tags
                    && m.entities == new.entities
            })
            .map(|m| m.id))
    }

    /// Secrets in a write's tags and entity values are replaced before anything is stored
    /// ([`hindsight_core::WriteGuard::redact_labels`]).
    pub(super) fn redact_labels(
        &self,
        tags: &mut Vec<String>,
        entities: &mut BTreeMap<String, String>,
    ) {
        let kinds = self.guard.redact_labels(tags, entities);
        if !kinds.is_empty() {
            info!(?kinds, "sensitive data replaced in tags or entities");
        }
    }

    /// The write pipeline: validate -> embed -> guard(memory, vector) -> (re-embed when redacted)
    /// -> dedup/conflict -> persist -> index. A quarantined write is stored with status
    /// `quarantined` and its provenance in `status_reason` (see [`GuardProvenance`]); it skips
    /// dedup/conflict so it can neither refresh nor supersede an active memory.
    pub async fn store_memory(&self, new: NewMemory, now: DateTime<Utc>) -> Result<StoreOutcome> {
        Ok(self.store_memory_timed(new, now).await?.0)
    }

    /// [`Engine::store_memory`], also returning where the time went (the server's profile).
    pub async fn store_memory_timed(
        &self,
        new: NewMemory,
        now: DateTime<Utc>,
    ) -> Result<(StoreOutcome, StoreTimings)> {
        let started = Instant::now();
        let mut timings = StoreTimings::default();
        let outcome = self.store_memory_in(new, now, &mut timings).await?;
        timings.total = started.elapsed();
        Ok((outcome, timings))
    }

    pub(super) async fn store_memory_in(
        &self,
        new: NewMemory,
        now: DateTime<Utc>,
        timings: &mut StoreTimings,
    ) -> Result<StoreOutcome> {
        self.validate_new(&new)?;
        if new.status.is_some_and(|s| s != Status::Active) {
            // Only an import restores other statuses; a write that asked for one and got an
            // active memory would be a silent surprise.
            return Err(Error::invalid(
                "status",
                "a write is stored active (or quarantined by the guard); use forget, revert or \
                 the quarantine commands to change a status",
            ));
        }
        let mut new = new;
        self.redact_labels(&mut new.tags, &mut new.entities);
        let (new, vector, mut decision, neighbourhood) =
            self.embed_and_screen_one(new, None, now, timings).await?;
        let mut clock = Instant::now();
        let mut verdict = Verdict::resolve(&new, &decision, Status::Active)?;
        timings.guard += lap(&mut clock);
        let vector = if verdict.redacted {
            let text = index_text(&verdict.content, &verdict.context);
            let text = if neighbourhood.is_empty() {
                text
            } else {
                format!("{neighbourhood}\n{text}")
            };
            let v = self.embed_one_document(text).await?;
            timings.embedding += lap(&mut clock);
            v
        } else {
            vector
        };
        if verdict.status == Status::Active
            && let Some(check) = &self.consensus
            && let Some(lesson) = self
                .lesson_decision(check.as_ref(), &new, &verdict.content, &vector)
                .await?
        {
            decision = lesson;
            verdict = Verdict::resolve(&new, &decision, Status::Active)?.keep_content(verdict);
        }
        timings.guard += lap(&mut clock);
        let (content, status, reason) = (verdict.content, verdict.status, verdict.reason);
        // What is stored is the (possibly redacted) context, never the caller's secrets.
        let new = NewMemory {
            context: verdict.context,
            ..new
        };

        let _guard = self.lock_writes(&new.namespace).await?;
        timings.lock_wait = lap(&mut clock);
        if let Some(id) = &new.id
            && self.store.get(&new.namespace, id).await?.is_some()
        {
            return Err(Error::conflict(format!(
                "a memory with id {id} already exists in namespace {}",
                new.namespace
            )));
        }

        let mut placement = Placement::default();
        let suspect = matches!(decision, GuardDecision::Suspect { .. });
        if status == Status::Active {
            let kind = stored_kind(&new);
            placement = self
                .place(&new, kind, &content, &vector, &[], suspect)
                .await?;
            timings.place = lap(&mut clock);
            if suspect {
                // A write the guard suspects retires nothing: what it contradicts stays active
                // beside it.
                let retired = std::mem::take(&mut placement.superseded);
                placement.related.extend(retired);
            }
            if let Some(top) = &placement.duplicate_of {
                // The write is dropped, not what it said about the fact: a more trusted source,
                // a higher importance and new labels carry over to the memory it merged into
                // (nothing does from a write the guard suspects).
                let existing = if suspect {
                    None
                } else {
                    self.store.get(&new.namespace, top).await?
                };
                let patch = match existing {
                    Some(old) => Some(merge_duplicate(
                        &old,
                        &new,
                        &content,
                        &self.consensus_config.trust,
                        self.write.max_labels,
                    ))
                    .filter(|p| !p.is_empty()),
                    None => None,
                };
                // Its own task, holding the lock until the merge is recorded (see
                // `spawn_store_write`: the embedded store updates its filter metadata after the
                // commit).
                let (store, ns, id) = (Arc::clone(&self.store), new.namespace.clone(), top.clone());
                spawn_store_write(async move {
                    if let Some(patch) = patch {
                        let merge = WriteBatch::patch(PatchChange::new(id.clone(), patch));
                        store
                            .apply(&ns, merge, NamespaceLease::in_process())
                            .await?;
                    }
                    store
                        .record_access(&ns, std::slice::from_ref(&id), now)
                        .await?;
                    // The memory this write merged into may be a concurrent write that is still
                    // waiting for its keyword commit: the empty batch releases the lock and
                    // answers only once that write is visible everywhere.
                    store.apply(&ns, WriteBatch::default(), _guard).await
                })
                .await?;
                info!(namespace = %new.namespace, existing = %top, "deduplicated write");
                return Ok(StoreOutcome {
                    id: top.clone(),
                    deduplicated: true,
                    superseded: Vec::new(),
                    related: Vec::new(),
                    guard: decision.name().to_owned(),
                    status: Status::Active,
                });
            }
        }
        if status == Status::Quarantined
            && new.id.is_none()
            && let Some(held) = self.held_copy(&new, &content, &vector).await?
        {
            // The same text from the same source already waits in quarantine: one entry for
            // the operator to review, not one per retry.
            info!(namespace = %new.namespace, existing = %held, "quarantined write already held");
            self.store
                .apply(&new.namespace, WriteBatch::default(), _guard)
                .await?;
            return Ok(StoreOutcome {
                id: held,
                deduplicated: true,
                superseded: Vec::new(),
                related: Vec::new(),
                guard: decision.name().to_owned(),
                status: Status::Quarantined,
            });
        }
        let Placement {
            superseded,
            related,
            newer,
            ..
        } = placement;
        timings.place += lap(&mut clock);

        let id = new.id.clone().unwrap_or_else(new_id);
        let mut memory = self.materialize(&new, id.clone(), content, status, reason, now);
        memory.neighbourhood = neighbourhood;
        if let Some(later) = newer.first() {
            // Dated before a memory it contradicts: the write is history, stored superseded by
            // the later fact, as it would be had the two arrived in date order.
            memory.status = Status::Superseded;
            memory.superseded_by = Some(later.clone());
            memory.status_reason = Some(format!("contradicted by {later}, which is dated later"));
            info!(namespace = %new.namespace, %later, "an earlier-dated write contradicts a later memory: stored as superseded");
        }
        // The new memory and the ones it contradicts change together, in one batch: never two
        // active versions, never a stored memory whose id the caller does not get. The batch
        // runs as its own task holding the namespace lock, which the store releases once the
        // batch is durable (writers queued meanwhile share the derived indexes' commits): a
        // caller that gives up (a timeout, a dropped connection) cuts neither a backend's commit
        // from the derived state it updates after it (the embedded store's vector and keyword
        // indexes) nor the lock short of the batch.
        let batch = WriteBatch::insert(memory.clone(), vector.clone()).with_statuses(
            StatusChange::retire_all(&superseded, &id, "contradicted by a newer memory"),
        );
        let (store, ns) = (Arc::clone(&self.store), new.namespace.clone());
        let released = ReleaseClock::default();
        let lease = _guard.holding(released.clone());
        let started = Instant::now();
        spawn_store_write(async move { store.apply(&ns, batch, lease).await }).await?;
        let insert_took = released.since(started);
        timings.insert = insert_took;
        timings.publish = lap(&mut clock).saturating_sub(insert_took);
        info!(namespace = %new.namespace, %id, kind = %memory.kind, status = %memory.status, superseded = superseded.len(), "stored memory");
        Ok(StoreOutcome {
            id,
            deduplicated: false,
            superseded,
            related,
            guard: decision.name().to_owned(),
            status: memory.status,
        })
    }

    /// Bulk import without dedup or conflict handling (datasets, restores): each record is
    /// validated and guarded, embedded in batches of `batch`, and inserted in one transaction per
    /// batch. Conversation turns are processed in time order within their conversation (each
    /// gets its neighbourhood, see [`WriteConfig::conversation_window`]); the returned ids and
    /// the record numbers in errors follow the input order. Records must carry ids when the
    /// caller needs them stable.
    pub async fn import(
        &self,
        mut records: Vec<NewMemory>,
        batch: usize,
        now: DateTime<Utc>,
        mut progress: impl FnMut(usize),
    ) -> Result<Vec<MemoryId>> {
        for new in &mut records {
            self.redact_labels(&mut new.tags, &mut new.entities);
        }
        // `position[i]`: where the record processed `i`-th stands in the input (errors name it,
        // the returned ids follow it).
        let mut position: Vec<usize> = (0..records.len()).collect();
        // Turns of a conversation in time order (a stable sort: the rest keeps its order), so
        // each turn's neighbourhood is the turns before it.
        if self.write.conversation_window > 0 {
            let key = |n: &NewMemory| {
                conversation_of(&n.entities, &n.tags).map(|c| {
                    (
                        n.namespace.as_str().to_owned(),
                        c,
                        n.created_at.unwrap_or(now),
                    )
                })
            };
            // Conversation turns are reordered among the slots they hold (by namespace,
            // conversation and time; stable for ties); every other record keeps its place.
            let slots: Vec<usize> = (0..records.len())
                .filter(|&i| key(&records[i]).is_some())
                .collect();
            let mut turns: Vec<_> = slots
                .iter()
                .map(|&i| (key(&records[i]), i, records[i].clone()))
                .collect();
            turns.sort_by(|a, b| a.0.cmp(&b.0));
            for (&slot, (_, from, turn)) in slots.iter().zip(turns) {
                records[slot] = turn;
                position[slot] = from;
            }
        }
        let mut windows = ImportWindows {
            k: self.write.conversation_window,
            ..ImportWindows::default()
        };
        let mut ids = Vec::with_capacity(records.len());
        let mut records = records.into_iter();
        loop {
            let chunk: Vec<NewMemory> = records.by_ref().take(batch.max(1)).collect();
            if chunk.is_empty() {
                break;
            }
            for new in &chunk {
                self.validate_new(new)?;
            }
            // Records before this chunk, so an error names the record's place in the import.
            let offset = ids.len();
            let none = vec![String::new(); chunk.len()];
            let Screened {
                writes: chunk,
                mut vectors,
                decisions,
                ..
            } = self.embed_and_screen(chunk, none).await?;
            let mut prepared = Vec::with_capacity(chunk.len());
            let mut redacted = Vec::new();
            for (i, (new, decision)) in chunk.iter().zip(&decisions).enumerate() {
                let verdict = Verdict::resolve(new, decision, new.status.unwrap_or_default())
                    .map_err(|e| {
                        Error::new(
                            e.kind,
                            format!(
                                "record {} ({:?}): {}",
                                position[offset + i] + 1,
                                new.id,
                                e.message
                            ),
                        )
                    })?;
                if verdict.redacted {
                    redacted.push(i);
                }
                let id = new.id.clone().unwrap_or_else(new_id);
                let redacted_new;
                let new = if verdict.context == new.context {
                    new
                } else {
                    redacted_new = NewMemory {
                        context: verdict.context.clone(),
                        ..new.clone()
                    };
                    &redacted_new
                };
                prepared.push(self.materialize(
                    new,
                    id,
                    verdict.content,
                    verdict.status,
                    verdict.reason,
                    now,
                ));
            }
            for m in &mut prepared {
                if let Some(key) = windows.unseen(m) {
                    let stored = self
                        .stored_turns(&m.namespace, &m.entities, &m.tags, m.created_at)
                        .await?;
                    windows.seed(key, stored);
                }
                m.neighbourhood = windows.next(m);
            }
            // Re-embedded: redacted writes (their stored text changed) and turns with a
            // neighbourhood (the stored vector embeds it too; the guard judged the turn alone).
            let again: Vec<usize> = (0..prepared.len())
                .filter(|i| redacted.contains(i) || !prepared[*i].neighbourhood.is_empty())
                .collect();
            if !again.is_empty() {
                let texts = again.iter().map(|&i| prepared[i].index_text()).collect();
                let fresh = self.embed_documents(texts).await?;
                for (&i, v) in again.iter().zip(fresh) {
                    vectors[i] = v;
                }
            }
            let items: Vec<(Memory, Vec<f32>)> = prepared.into_iter().zip(vectors).collect();
            ids.extend(items.iter().map(|(m, _)| m.id.clone()));
            let count = items.len();
            // One batch per run of records of one namespace, in input order.
            let mut items = items.into_iter().peekable();
            while let Some(first) = items.next() {
                let ns = first.0.namespace.clone();
                let mut run = vec![first];
                while let Some(next) = items.next_if(|(m, _)| m.namespace == ns) {
                    run.push(next);
                }
                self.store
                    .apply(&ns, WriteBatch::import(run), NamespaceLease::in_process())
                    .await?;
            }
            progress(count);
        }
        // Back in input order.
        let mut in_order = vec![MemoryId(String::new()); ids.len()];
        for (id, &at) in ids.into_iter().zip(&position) {
            in_order[at] = id;
        }
        Ok(in_order)
    }
}
