//! Changes to stored memories: update, forget, revert, purge, feedback, and the reads they
//! start from.

use super::*;

impl Engine {
    /// Updates fields of a memory; re-embeds when content or context change. New text passes the
    /// guard like a write, and on an active memory gets a write's dedup and conflict rules: an
    /// update that would make it a copy of another active memory is refused (`Conflict`), and
    /// the memories the new text contradicts are superseded by it. Kind `working` is refused, and
    /// so is a memory held in quarantine (an operator releases or discards it).
    /// The caller is trusted like the user; [`Engine::update_as`] names a less trusted writer.
    pub async fn update(
        &self,
        ns: &Namespace,
        id: &MemoryId,
        patch: &MemoryPatch,
    ) -> Result<Memory> {
        self.update_as(ns, id, patch, Source::User).await
    }

    /// [`Engine::update`] by a writer trusted at most as `writer` (an MCP token's `max_source`):
    /// new text (content or context) from a writer less trusted than the memory's source is
    /// stored at the writer's trust, and is screened and placed at that trust, so an agent cannot
    /// write words that rank, and supersede, as the user's.
    pub async fn update_as(
        &self,
        ns: &Namespace,
        id: &MemoryId,
        patch: &MemoryPatch,
        writer: Source,
    ) -> Result<Memory> {
        patch.validate()?;
        self.check_sizes(
            patch.content.as_deref(),
            patch.context.as_deref(),
            patch.tags.as_deref(),
            patch.entities.as_ref(),
        )?;
        if patch.is_empty() {
            return Err(Error::invalid("fields", "nothing to update"));
        }
        if let Some(tags) = &patch.tags {
            refuse_lesson_tag(tags)?;
        }
        if patch.kind == Some(MemoryKind::Working) {
            return Err(Error::invalid(
                "kind",
                "working memory is session state: use the working-memory API",
            ));
        }
        let current = self.current(ns, id, "be updated").await?;
        if crate::consensus::is_lesson(&current) {
            return Err(lesson_refused(id, "updated"));
        }
        refuse_quarantined(&current, "updated")?;
        // A source the patch names is capped at the writer's trust; new text from a writer less
        // trusted than the memory takes the writer's trust.
        let mut source = patch.source.map(|s| s.at_most(writer));
        let cap = current.source.at_most(writer);
        if patch.changes_text() && cap != current.source {
            source = Some(source.map_or(cap, |s| s.at_most(cap)));
        }
        let lowered;
        let patch = if source == patch.source {
            patch
        } else {
            let mut p = patch.clone();
            p.source = source;
            lowered = p;
            &lowered
        };
        let redacted_labels;
        let patch = if patch.tags.is_some() || patch.entities.is_some() {
            let mut p = patch.clone();
            let mut tags = p.tags.take().unwrap_or_default();
            let mut entities = p.entities.take().unwrap_or_default();
            self.redact_labels(&mut tags, &mut entities);
            p.tags = patch.tags.is_some().then_some(tags);
            p.entities = patch.entities.is_some().then_some(entities);
            redacted_labels = p;
            &redacted_labels
        } else {
            patch
        };
        if !patch.changes_text() {
            let batch = WriteBatch::patch(PatchChange::new(id.clone(), patch.clone()));
            let updated = self
                .store
                .apply(ns, batch, NamespaceLease::in_process())
                .await
                .and_then(Applied::single)?;
            info!(namespace = %ns, %id, "updated memory");
            return Ok(updated);
        }
        // New text passes the guard like a new write (as the memory's own source): a reject
        // changes nothing, a redaction replaces the secrets in the patch, a quarantine moves the
        // memory to quarantine before its text changes.
        let mut next = current.clone();
        patch.apply(&mut next);
        let screened = as_new_memory(&next);
        // A turn keeps its place in its conversation: its stored neighbourhood.
        let (screened, vector, mut decision, _) = self
            .embed_and_screen_one(
                screened,
                Some(current.neighbourhood.clone()),
                current.created_at,
                &mut StoreTimings::default(),
            )
            .await?;
        let mut verdict = Verdict::resolve(&screened, &decision, current.status)?;
        // As for a new write: text that matches a recorded guard lesson is quarantined.
        if verdict.status != Status::Quarantined
            && let Some(check) = &self.consensus
            && let Some(lesson) = self
                .lesson_decision(check.as_ref(), &screened, &verdict.content, &vector)
                .await?
        {
            decision = lesson;
            verdict = Verdict::resolve(&screened, &decision, current.status)?.keep_content(verdict);
        }
        let (patch, vector) = if verdict.redacted {
            let mut p = patch.clone();
            if verdict.content != next.content {
                p.content = Some(verdict.content.clone());
            }
            if verdict.context != next.context {
                p.context = Some(verdict.context.clone());
            }
            let mut redacted = next.clone();
            redacted.content = verdict.content.clone();
            redacted.context = verdict.context.clone();
            let v = self.embed_one_document(redacted.index_text()).await?;
            (std::borrow::Cow::Owned(p), v)
        } else {
            (std::borrow::Cow::Borrowed(patch), vector)
        };
        // New text of an active memory gets a new write's dedup and conflict rules: it must not
        // become a copy of another active memory, and what it now contradicts is retired.
        let guard = self.lock_writes(ns).await?;
        // Decided on the status read before the lock: refused when it changed meanwhile (a
        // forget or a supersession), so no memory is rewritten or retires others out of force.
        let locked = self.existing(ns, id).await?;
        if locked.status != current.status
            || locked.superseded_by != current.superseded_by
            || locked.content != current.content
            || locked.context != current.context
        {
            return Err(Error::conflict(format!(
                "memory {id} was changed by another call while this update ran (status {} -> {}); nothing was changed",
                current.status, locked.status
            )));
        }
        let mut superseded = Vec::new();
        if verdict.status == Status::Active && current.status == Status::Active {
            let mut view = as_new_memory(&next);
            view.content = verdict.content.clone();
            view.context = verdict.context.clone();
            let placement = self
                .place(
                    &view,
                    next.kind,
                    &verdict.content,
                    &vector,
                    std::slice::from_ref(id),
                    next.is_suspect(),
                )
                .await?;
            if let Some(top) = &placement.duplicate_of {
                return Err(Error::conflict(format!(
                    "memory {top} is active and already says this: forget {id} instead (nothing was changed)"
                )));
            }
            superseded = placement.superseded;
            superseded.extend(placement.newer);
        }
        let quarantine = (verdict.status == Status::Quarantined
            && current.status != Status::Quarantined)
            .then(|| {
                // Only from the status read above: a memory forgotten meanwhile stays forgotten.
                let mut change = StatusChange::new(id.clone(), current.status, Status::Quarantined);
                change.reason = verdict.reason.clone();
                change.superseded_by = current.superseded_by.clone();
                change
            });
        let quarantined = quarantine.is_some();
        let mut changes: Vec<StatusChange> = quarantine.into_iter().collect();
        changes.extend(StatusChange::retire_all(
            &superseded,
            id,
            "contradicted by an updated memory",
        ));
        // One batch changes the text and the statuses together, as its own task holding the
        // lock ([`spawn_store_write`]).
        let batch = WriteBatch {
            patches: vec![PatchChange::new(id.clone(), patch.into_owned()).vector(vector)],
            statuses: changes,
            ..WriteBatch::default()
        };
        let updated = self
            .apply_held(guard, ns, batch)
            .await
            .and_then(Applied::single)?;
        if quarantined {
            warn!(namespace = %ns, %id, "update quarantined by the guard");
        }
        if !superseded.is_empty() {
            info!(namespace = %ns, %id, ?superseded, "update retired the memories it contradicts");
        }
        info!(namespace = %ns, %id, guard = decision.name(), "updated memory");
        Ok(updated)
    }

    /// Soft delete: status `forgotten` with a reason. Purge hard-deletes later.
    pub async fn forget(&self, ns: &Namespace, id: &MemoryId, reason: &str) -> Result<Memory> {
        self.forget_as(ns, id, reason, false).await
    }

    /// An operator removes a guard lesson (one recorded in error): it becomes `forgotten`, and no
    /// lesson is recorded for the same flagged memory again. [`Engine::forget`], which agents
    /// reach over MCP, refuses lessons: forgetting one would switch off the guard's memory of an
    /// attack.
    pub async fn forget_lesson(
        &self,
        ns: &Namespace,
        id: &MemoryId,
        reason: &str,
    ) -> Result<Memory> {
        self.forget_as(ns, id, reason, true).await
    }

    pub(super) async fn forget_as(
        &self,
        ns: &Namespace,
        id: &MemoryId,
        reason: &str,
        lesson: bool,
    ) -> Result<Memory> {
        if reason.trim().is_empty() {
            return Err(Error::invalid(
                "reason",
                "a reason is required to forget a memory",
            ));
        }
        let n = reason.chars().count();
        if n > self.write.max_content_chars {
            return Err(Error::invalid(
                "reason",
                format!(
                    "{n} characters exceeds the limit of {}",
                    self.write.max_content_chars
                ),
            ));
        }
        hindsight_core::refuse_nul("reason", [reason])?;
        if reason
            .trim_start()
            .starts_with(crate::quarantine::DISCARDED)
        {
            return Err(Error::invalid(
                "reason",
                "that wording is reserved for memories an operator discarded from quarantine",
            ));
        }
        // Serialised with writes: a forget landing between a write's similarity search and its
        // insert would otherwise be retired as `superseded` by it (then purge skips it and
        // revert can bring it back).
        let _guard = self.lock_writes(ns).await?;
        // Forgetting twice would overwrite the first reason (the audit trail); a quarantined
        // memory is the operator's (`quarantine discard`), and forgetting it would let `revert`
        // bring it back without a release.
        let m = self.current(ns, id, "be forgotten again").await?;
        match (crate::consensus::is_lesson(&m), lesson) {
            (true, false) => return Err(lesson_refused(id, "forgotten")),
            (false, true) => {
                return Err(Error::invalid(
                    "id",
                    format!("memory {id} is not a guard lesson: forget it the ordinary way"),
                ));
            }
            _ => {}
        }
        if m.status == Status::Quarantined {
            return Err(Error::invalid(
                "id",
                format!(
                    "memory {id} is quarantined: an operator discards it with `hindsight quarantine discard`"
                ),
            ));
        }
        // Compare-and-set: a status changed by another process since the read is refused.
        let change = StatusChange::new(id.clone(), m.status, Status::Forgotten).reason(reason);
        let m = self
            .apply_held(_guard, ns, WriteBatch::statuses(vec![change]))
            .await
            .and_then(Applied::single)?;
        info!(namespace = %ns, %id, reason, "forgot memory");
        Ok(m)
    }

    /// Restores a superseded, deprecated or forgotten memory to `active`. Quarantined memories
    /// and ones an operator discarded from quarantine are refused (see [`Engine::release`]).
    pub async fn revert(&self, ns: &Namespace, id: &MemoryId) -> Result<Memory> {
        // Serialised with writes, whose conflict handling may be superseding the same chain.
        let _guard = self.lock_writes(ns).await?;
        let m = self.existing(ns, id).await?;
        if crate::consensus::is_lesson(&m) {
            return Err(lesson_refused(id, "reverted"));
        }
        if m.status == Status::Active {
            return Err(Error::invalid(
                "id",
                format!("memory {id} is already active: nothing to revert"),
            ));
        }
        if m.status == Status::Quarantined {
            return Err(Error::invalid(
                "id",
                format!(
                    "memory {id} is quarantined by the guard: an operator releases it with `hindsight quarantine release`, which runs the dedup and conflict checks"
                ),
            ));
        }
        if crate::quarantine::is_discarded(&m) {
            return Err(Error::invalid(
                "id",
                format!("memory {id} was discarded from quarantine by an operator and stays out"),
            ));
        }
        // Undoing a supersession retires the version now in force (the end of the chain of
        // `superseded_by` links: A -> B -> C retires C), so two contradicting versions are not
        // both active; it stays superseded and revertible in turn.
        let mut in_force = None;
        // The memory and its chain of successors: the placement below must not take the
        // version this revert retires for a duplicate (the judge reads a change cue in the newer
        // text only, so "moved to Thursdays" supersedes "on Fridays" but not the other way).
        let mut chain = vec![id.clone()];
        if m.status == Status::Superseded {
            let mut next = m.superseded_by.clone();
            let mut seen = std::collections::HashSet::from([id.clone()]);
            while let Some(newer) = next.take() {
                if !seen.insert(newer.clone()) {
                    break; // a cycle: links edited by hand
                }
                chain.push(newer.clone());
                let Some(n) = self.store.get(ns, &newer).await? else {
                    break;
                };
                match n.status {
                    Status::Active => in_force = Some(newer),
                    Status::Superseded => next = n.superseded_by,
                    _ => {}
                }
            }
        }
        // Memories written while this one was out of force (a forgotten memory has no chain)
        // get the same dedup, subject and trust rules as a new write (`Engine::place`): the
        // restored memory must not stand active beside a copy of itself or a memory it
        // contradicts.
        let vector =
            self.store.get_vector(ns, id).await?.ok_or_else(|| {
                Error::not_found(format!("vector of memory {id} in namespace {ns}"))
            })?;
        let placement = self
            .place(
                &as_new_memory(&m),
                m.kind,
                &m.content,
                &vector,
                &chain,
                m.is_suspect(),
            )
            .await?;
        if let Some(top) = &placement.duplicate_of {
            return Err(Error::conflict(format!(
                "memory {top} is active and says the same as {id}: nothing to revert (forget {top} first to restore {id} in its place)"
            )));
        }
        let mut retired: Vec<MemoryId> = in_force.iter().cloned().collect();
        for old in placement.superseded.into_iter().chain(placement.newer) {
            if !retired.contains(&old) {
                retired.push(old);
            }
        }
        let reason = if retired.is_empty() {
            format!("reverted from {}", m.status)
        } else {
            let names: Vec<&str> = retired.iter().map(MemoryId::as_str).collect();
            format!("reverted from {}; {} retired", m.status, names.join(", "))
        };
        // One all-or-nothing change, each part only from the status read above: never the
        // restored memory active beside a version it contradicts, never a status another
        // process changed meanwhile overwritten. The retirements come first (a backend with a
        // unique index over active texts sees room made before the restore).
        let mut changes =
            StatusChange::retire_all(&retired, id, &format!("{id} was restored by revert"));
        changes.push(StatusChange::new(id.clone(), m.status, Status::Active).reason(reason));
        let restored = self
            .apply_held(_guard, ns, WriteBatch::statuses(changes))
            .await
            .and_then(Applied::single)?;
        if !retired.is_empty() {
            info!(namespace = %ns, %id, ?retired, "revert retired the versions in force");
        }
        info!(namespace = %ns, %id, "reverted memory to active");
        Ok(restored)
    }

    /// [`Store::apply`] of `batch` as its own task ([`spawn_store_write`]), handing it `lock`
    /// (which the store releases once the batch is durable).
    pub(crate) async fn apply_held(
        &self,
        lock: NamespaceWriteLock,
        ns: &Namespace,
        batch: WriteBatch,
    ) -> Result<Applied> {
        let (store, ns) = (Arc::clone(&self.store), ns.clone());
        spawn_store_write(async move { store.apply(&ns, batch, lock).await }).await
    }

    /// Hard-deletes forgotten memories (only those), logged.
    pub async fn purge(&self, ns: &Namespace) -> Result<Vec<MemoryId>> {
        let purged = self.store.purge_forgotten(ns, None).await?;
        info!(namespace = %ns, count = purged.len(), "purged forgotten memories");
        Ok(purged)
    }

    /// The memory `id`, or a not-found error.
    pub(crate) async fn existing(&self, ns: &Namespace, id: &MemoryId) -> Result<Memory> {
        self.store
            .get(ns, id)
            .await?
            .ok_or_else(|| Error::not_found(format!("memory {id} in namespace {ns}")))
    }

    /// The memory `id`, unless it is missing or forgotten (then an error saying it cannot
    /// `what`, e.g. "be updated"): forgotten memories are read-only until reverted.
    pub(super) async fn current(
        &self,
        ns: &Namespace,
        id: &MemoryId,
        what: &str,
    ) -> Result<Memory> {
        let m = self.existing(ns, id).await?;
        if m.status == Status::Forgotten {
            return Err(Error::invalid(
                "id",
                format!("memory {id} is forgotten and cannot {what}; revert it first"),
            ));
        }
        Ok(m)
    }

    /// Usefulness feedback: +1 when the memory helped, -1 otherwise.
    pub async fn feedback(&self, ns: &Namespace, id: &MemoryId, useful: bool) -> Result<Memory> {
        let m = self.current(ns, id, "take feedback").await?;
        refuse_quarantined(&m, "given feedback")?;
        self.store
            .add_usefulness(ns, id, if useful { 1.0 } else { -1.0 })
            .await
    }
}
