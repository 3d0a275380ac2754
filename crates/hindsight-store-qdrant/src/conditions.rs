//! Translation of [`Filter`] and [`StructuredQuery`] into Qdrant filters.
//!
//! The translation is a *pre-filter*: it admits a superset of what [`Filter::matches`] admits (it is
//! exact except at the sub-microsecond edges of a `created` range), and the store re-checks every
//! returned memory with [`Filter::matches`] itself, deepening the request when that drops hits. So
//! the reference semantics hold even where Qdrant's condition language cannot say them exactly.

use hindsight_core::{Filter, Namespace, StructuredQuery, TimeRange};
use qdrant_client::qdrant::r#match::MatchValue;
use qdrant_client::qdrant::{self, Condition, Range};

use crate::payload::{entity_pair, field};

/// Exact keyword equality. (`Condition::matches(key, String)` would turn a value containing
/// whitespace into a full-text match, so values are always wrapped explicitly.)
pub fn keyword(key: &str, value: impl Into<String>) -> Condition {
    Condition::matches(key, MatchValue::Keyword(value.into()))
}

/// `ns == namespace`: on every request (the tenant condition).
pub fn namespace(ns: &Namespace) -> Condition {
    keyword(field::NAMESPACE, ns.as_str())
}

fn any_of<T: AsRef<str>>(key: &str, values: &[T]) -> Condition {
    Condition::matches(
        key,
        values
            .iter()
            .map(|v| v.as_ref().to_owned())
            .collect::<Vec<String>>(),
    )
}

/// `created_us` in a range that contains every microsecond `[start, end)` touches:
/// `floor_us(start) <= created_us <= floor_us(end)`. A superset of `TimeRange::contains`.
pub fn created_range(r: &TimeRange) -> Condition {
    Condition::range(
        field::CREATED_US,
        Range {
            gte: Some(r.start.timestamp_micros() as f64),
            lte: Some(r.end.timestamp_micros() as f64),
            ..Range::default()
        },
    )
}

/// The hard constraints: namespace and every [`Filter`] clause, as `must` conditions.
pub fn hard_conditions(ns: &Namespace, filter: &Filter) -> Vec<Condition> {
    let mut must = vec![namespace(ns)];
    if !filter.kinds.is_empty() {
        let kinds: Vec<&str> = filter.kinds.iter().map(|k| k.as_str()).collect();
        must.push(any_of(field::KIND, &kinds));
    }
    for tag in &filter.tags {
        must.push(keyword(field::TAGS, tag.clone()));
    }
    if !filter.exclude_tags.is_empty() {
        let none_of: Vec<Condition> = filter
            .exclude_tags
            .iter()
            .map(|t| keyword(field::TAGS, t.clone()))
            .collect();
        must.push(qdrant::Filter::must_not(none_of).into());
    }
    for (k, v) in &filter.entities {
        must.push(keyword(field::ENTITIES, entity_pair(k, v)));
    }
    if !filter.outcomes.is_empty() {
        let o: Vec<&str> = filter.outcomes.iter().map(|o| o.as_str()).collect();
        must.push(any_of(field::OUTCOME, &o));
    }
    if !filter.task_types.is_empty() {
        let t: Vec<&str> = filter.task_types.iter().map(|t| t.as_str()).collect();
        must.push(any_of(field::TASK_TYPE, &t));
    }
    let statuses: Vec<&str> = filter
        .effective_statuses()
        .iter()
        .map(|s| s.as_str())
        .collect();
    must.push(any_of(field::STATUS, &statuses));
    if let Some(r) = &filter.created {
        must.push(created_range(r));
    }
    must
}

/// The Qdrant filter of a path search: [`hard_conditions`] as `must`.
pub fn search_filter(ns: &Namespace, filter: &Filter) -> qdrant::Filter {
    qdrant::Filter::must(hard_conditions(ns, filter))
}

/// The query's hints (kinds, tags), one condition each, lowercased like the stored fields.
pub fn hint_conditions(query: &StructuredQuery) -> Vec<Condition> {
    let mut out = Vec::new();
    if !query.kinds.is_empty() {
        let kinds: Vec<&str> = query.kinds.iter().map(|k| k.as_str()).collect();
        out.push(any_of(field::KIND, &kinds));
    }
    if !query.tags.is_empty() {
        let tags: Vec<String> = query.tags.iter().map(|t| t.to_ascii_lowercase()).collect();
        out.push(any_of(field::TAGS_LC, &tags));
    }
    out
}

/// Candidates of the structured path: the hard constraints, plus at least one signal.
///
/// With a selective signal (identifier, entity or time window), the signals are those; tag and
/// kind hints then only add to the score. Without one, tag and kind hints are the signals, and the
/// caller takes only the newest matches (a hint alone never enumerates a namespace). Returns `None`
/// when the query has no signal at all. Signals compare ASCII-case-insensitively, like
/// [`StructuredQuery::score`], through the lowercased payload copies.
pub fn structured_filter(
    ns: &Namespace,
    filter: &Filter,
    query: &StructuredQuery,
) -> Option<qdrant::Filter> {
    let mut should = Vec::new();
    if query.has_selective_signal() {
        if !query.identifiers.is_empty() {
            let ids: Vec<String> = query
                .identifiers
                .iter()
                .map(|i| i.to_ascii_lowercase())
                .collect();
            should.push(any_of(field::ENTITY_VALUES_LC, &ids));
        }
        if !query.entities.is_empty() {
            let pairs: Vec<String> = query
                .entities
                .iter()
                .map(|(k, v)| entity_pair(k, &v.to_ascii_lowercase()))
                .collect();
            should.push(any_of(field::ENTITIES_LC, &pairs));
        }
        if let Some(r) = &query.time_range {
            should.push(created_range(r));
        }
    } else {
        should = hint_conditions(query);
    }
    if should.is_empty() {
        return None;
    }
    let mut f = search_filter(ns, filter);
    f.should = should;
    Some(f)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use chrono::{DateTime, Duration, Utc};
    use hindsight_core::{MemoryKind, Outcome, Status, TaskType};
    use qdrant::condition::ConditionOneOf;

    use super::*;

    /// A condition as `(key, what)` text, for compact expectations.
    fn show(c: &Condition) -> String {
        match &c.condition_one_of {
            Some(ConditionOneOf::Field(f)) => {
                let what = if let Some(r) = &f.range {
                    format!("range[{:?}, {:?}]", r.gte, r.lte)
                } else {
                    match f.r#match.as_ref().and_then(|m| m.match_value.as_ref()) {
                        Some(MatchValue::Keyword(k)) => format!("= {k}"),
                        Some(MatchValue::Keywords(ks)) => format!("in {:?}", ks.strings),
                        other => format!("{other:?}"),
                    }
                };
                format!("{} {what}", f.key)
            }
            Some(ConditionOneOf::Filter(f)) if f.must.is_empty() && f.should.is_empty() => {
                let none: Vec<String> = f.must_not.iter().map(show).collect();
                format!("not any of [{}]", none.join(", "))
            }
            other => format!("{other:?}"),
        }
    }

    fn shown(cs: &[Condition]) -> Vec<String> {
        cs.iter().map(show).collect()
    }

    fn t(s: i64, ns: u32) -> DateTime<Utc> {
        DateTime::from_timestamp(s, ns).expect("valid")
    }

    #[test]
    fn default_filter_is_namespace_and_active() {
        let got = shown(&hard_conditions(
            &Namespace::new("ns-a"),
            &Filter::default(),
        ));
        assert_eq!(got, vec!["ns = ns-a", r#"status in ["active"]"#]);
        // Whitespace must not turn the tenant condition into a full-text match.
        let got = shown(&hard_conditions(
            &Namespace::new("team a"),
            &Filter::default(),
        ));
        assert_eq!(got[0], "ns = team a");
    }

    #[test]
    fn every_filter_clause_translates() {
        let f = Filter {
            kinds: vec![MemoryKind::Warning, MemoryKind::Episodic],
            tags: vec!["Billing".into(), "two words".into()],
            exclude_tags: vec!["guard-lesson".into(), "draft".into()],
            entities: BTreeMap::from([("order_id".into(), "ORD-1".into())]),
            outcomes: vec![Outcome::Failure],
            task_types: vec![TaskType::Modify, TaskType::Query],
            statuses: vec![Status::Active, Status::Superseded],
            created: Some(TimeRange {
                start: t(10, 1_500),
                end: t(20, 0),
            }),
        };
        let got = shown(&hard_conditions(&Namespace::new("n"), &f));
        assert_eq!(
            got,
            vec![
                "ns = n".to_owned(),
                r#"kind in ["warning", "episodic"]"#.into(),
                "tags = Billing".into(),
                "tags = two words".into(),
                "not any of [tags = guard-lesson, tags = draft]".into(),
                r#"ent = ["order_id","ORD-1"]"#.into(),
                r#"outcome in ["failure"]"#.into(),
                r#"task_type in ["modify", "query"]"#.into(),
                r#"status in ["active", "superseded"]"#.into(),
                "created_us range[Some(10000001.0), Some(20000000.0)]".into(),
            ]
        );
    }

    /// The micro-second range is a superset of `TimeRange::contains` (the store post-filters).
    #[test]
    fn created_range_never_excludes_a_contained_instant() {
        let r = TimeRange {
            start: t(100, 999),
            end: t(200, 1),
        };
        let c = created_range(&r);
        let Some(ConditionOneOf::Field(f)) = &c.condition_one_of else {
            panic!("field condition")
        };
        let range = f.range.expect("range");
        let admits = |x: DateTime<Utc>| {
            let us = x.timestamp_micros() as f64;
            range.gte.is_none_or(|g| us >= g) && range.lte.is_none_or(|l| us <= l)
        };
        for x in [
            r.start,
            r.start + Duration::nanoseconds(1),
            r.end - Duration::nanoseconds(1),
            t(150, 0),
        ] {
            assert!(r.contains(x));
            assert!(admits(x), "{x} is in the range but the condition drops it");
        }
        assert!(!admits(t(99, 0)) && !admits(t(201, 0)));
    }

    #[test]
    fn structured_with_selective_signals_ignores_hints_as_candidates() {
        let q = StructuredQuery {
            identifiers: vec!["ORD-77812".into()],
            entities: BTreeMap::from([("customer".into(), "C-9".into())]),
            time_range: Some(TimeRange {
                start: t(0, 0),
                end: t(1, 0),
            }),
            tags: vec!["Refund".into()],
            kinds: vec![MemoryKind::Warning],
        };
        let f = structured_filter(&Namespace::new("n"), &Filter::default(), &q).expect("signals");
        assert_eq!(shown(&f.must), vec!["ns = n", r#"status in ["active"]"#]);
        assert_eq!(
            shown(&f.should),
            vec![
                r#"ent_val_lc in ["ord-77812"]"#,
                r#"ent_lc in ["[\"customer\",\"c-9\"]"]"#,
                "created_us range[Some(0.0), Some(1000000.0)]",
            ]
        );
    }

    #[test]
    fn structured_hints_alone_are_lowercased_signals() {
        let q = StructuredQuery {
            tags: vec!["Refund".into()],
            kinds: vec![MemoryKind::Warning],
            ..StructuredQuery::default()
        };
        let f = structured_filter(&Namespace::new("n"), &Filter::default(), &q).expect("hints");
        assert_eq!(
            shown(&f.should),
            vec![r#"kind in ["warning"]"#, r#"tags_lc in ["refund"]"#]
        );
        assert!(
            structured_filter(
                &Namespace::new("n"),
                &Filter::default(),
                &StructuredQuery::default()
            )
            .is_none()
        );
    }
}
