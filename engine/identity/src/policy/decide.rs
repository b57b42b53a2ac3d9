//! The compiled policy set: sliced per tool at load, asked once per call.
//!
//! Cedar evaluates every policy of the set it is given, so the set is cut per tool at
//! load: a tool's slice holds only the policies whose scope can match its action and
//! resource (an action group it is in, its service, itself). At a caller's first call of
//! a slice's tool, the slice is cut again to the policies whose principal scope can match
//! that caller (its uid, its roles) and the set kept: most of a slice is for other roles.
//! Each tool also has its *discovery* slice: the same policies with every condition on
//! `context` taken out of the permits (a permit under an argument condition could permit
//! the call) and every forbid with one dropped (it might not apply), so a list shows
//! exactly the tools some call could run.
//!
//! What a caller is asked about is kept per caller (`CallerEntry`): its entity, its cut
//! sets, the entities of each tool it called (Cedar closes their ancestors when they
//! are gathered, most of a decision's cost), its decisions that depend on nothing of
//! the call but `dryRun` and what discovery answered per tool. A call whose decision is
//! kept costs a hash of the caller's identity, two read locks and a reference count
//! (docs/policy.md, "Cost").

use std::collections::hash_map::RandomState;
use std::collections::{BTreeMap, HashMap};
use std::hash::{BuildHasher, BuildHasherDefault, Hash, Hasher};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, RwLock};

use cedar_policy::{
    ActionConstraint, Authorizer, Context, Decision as CedarDecision, Effect, Entities, Entity,
    EntityUid, Policy, PolicyId, PolicySet, PrincipalConstraint, Request, ResourceConstraint,
    RestrictedExpression,
};
use serde_json::{Map, Value};

use super::est;
use super::load::{Confirm, Loaded, Source};
use super::request::{Shape, Types, action_groups, read_record};
use crate::caller::{Caller, Claim, User};
use crate::catalog::{Catalog, Tool};
use crate::error::{CallError, Classification};

/// What the policies decided of one call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    /// Whether the call may run.
    pub allowed: bool,
    /// The ids of the determining policies: the permits that allowed it, or the forbids
    /// that refused it (empty when nothing permitted it). Shared: a kept decision is
    /// handed to each call it answers without a copy.
    pub policies: Arc<[String]>,
    /// The strictest `@confirm` of the permits that allowed it.
    pub confirm: Option<Confirm>,
}

/// What a call brings to its decision beyond its arguments: `context.dryRun`,
/// `context.cost` and `context.guards`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Facts<'a> {
    /// Whether the call would answer a preview.
    pub dry_run: bool,
    /// Its estimated cost: unit and units, when priced.
    pub cost: Option<(&'a str, u64)>,
    /// The ids of the guard rules that fired on its arguments (docs/guards.md).
    pub guards: &'a [Arc<str>],
}

/// `context.cost`: `{<unit>: <units>}` for a priced call, `{}` otherwise.
fn cost_record(cost: Option<(&str, u64)>) -> RestrictedExpression {
    let pairs = cost.map(|(unit, n)| {
        (
            unit.to_string(),
            RestrictedExpression::new_long(i64::try_from(n).unwrap_or(i64::MAX)),
        )
    });
    RestrictedExpression::new_record(pairs)
        .unwrap_or_else(|_| RestrictedExpression::new_bool(false))
}

/// A call's arguments did not fit the Cedar type of one of them (JSON pointer).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unreadable(pub String);

/// The policies of one tool.
#[derive(Debug)]
struct ToolPolicies {
    name: String,
    action: EntityUid,
    resource: EntityUid,
    action_entity: Entity,
    tool_entity: Entity,
    arguments: Vec<(String, Shape)>,
    /// Its slice: an index into [`Policies::slices`].
    slice: usize,
}

/// What is kept of one caller (a uid with its roles and claims) for one policy set.
#[derive(Debug)]
struct CallerEntry {
    /// Who it is to policies: what [`Who::is`] compares.
    who: Who,
    uid: EntityUid,
    /// Its entity (`None`: a claim Cedar cannot hold; every question is refused).
    entity: Option<Entity>,
    /// Its slices cut by principal scope: (slice, discovery?).
    cuts: RwLock<HashMap<(usize, bool), Arc<Cut>>>,
    /// What it keeps per tool it called (index into [`Policies::tools`]).
    tools: RwLock<HashMap<usize, Kept, ByIndex>>,
    /// What discovery answered per tool: 0 not asked yet, 1 hidden, 2 shown.
    visible: Vec<AtomicU8>,
}

/// What one caller keeps of one tool it called.
#[derive(Debug, Default)]
struct Kept {
    /// The entities of a call: itself, the tool and its action, their ancestors closed.
    entities: Option<Arc<Entities>>,
    /// Where the caller's cut of the tool's slice reads nothing of the context but
    /// `dryRun` ([`Cut::kept`]), the decision per value of `dryRun` (`[false, true]`):
    /// a function of the caller, the tool and that flag alone, so Cedar is asked once.
    decided: [Option<Decision>; 2],
}

/// The parts of a caller policies read (as Cedar's principal): its uid (a user's issuer and subject, or a
/// key's name), its roles and its claims. A user's next token may carry others.
#[derive(Debug)]
struct Who {
    user: Option<User>,
    name: String,
    roles: Vec<String>,
    claims: Vec<(String, Claim)>,
}

impl Who {
    fn of(p: &Caller) -> Self {
        Self {
            user: p.user.clone(),
            name: if p.user.is_some() {
                String::new()
            } else {
                p.name.clone()
            },
            roles: p.roles.clone(),
            claims: p.claims.clone(),
        }
    }

    /// Whether `p` is this caller, compared part by part (no key is formatted).
    fn is(&self, p: &Caller) -> bool {
        let uid = match (&self.user, &p.user) {
            (Some(a), Some(b)) => a == b,
            (None, None) => self.name == p.name,
            _ => false,
        };
        uid && self.roles == p.roles && self.claims == p.claims
    }
}

/// Hashes the uid of `p` (a user's issuer and subject, or a key's name) and how many
/// roles and claims it has: callers differ by uid far more often than by roles, and
/// those that share a hash are told apart by [`Who::is`].
fn hash_who(p: &Caller, h: &mut impl Hasher) {
    match &p.user {
        Some(u) => {
            u.issuer.hash(h);
            u.subject.hash(h);
        }
        None => p.name.hash(h),
    }
    h.write_usize(p.roles.len());
    h.write_usize(p.claims.len());
}

/// A map keyed by a tool's index or an already keyed hash: the key is its own hash
/// (mixed by a multiply), not hashed again. Neither is chosen by a caller.
type ByIndex = BuildHasherDefault<IndexHasher>;

/// [`ByIndex`]'s hasher: one multiply of the `usize` or `u64` it is given.
#[derive(Debug, Default)]
struct IndexHasher(u64);

impl Hasher for IndexHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = n.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }

    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }
}

/// A slice cut for one caller.
#[derive(Debug, Default)]
struct Cut {
    set: PolicySet,
    /// Whether a policy of the set reads `context.now` (else the context goes without
    /// it: a `datetime` is parsed each time it is built).
    reads_now: bool,
    /// Whether no policy of the set reads the context beyond `context.dryRun`: its
    /// decisions are kept ([`CallerEntry::decided`]).
    kept: bool,
}

/// Callers kept before the cache starts again.
const KEPT_CALLERS: usize = 4_096;

/// Tools one caller keeps (entities, decisions) before it starts again.
const KEPT_ENTITIES: usize = 512;

/// A validated policy set compiled against one catalog.
#[derive(Debug)]
pub struct Policies {
    loaded: Loaded,
    types: Types,
    /// By tool, in the catalog's order (sorted by full name).
    tools: Vec<ToolPolicies>,
    /// Which tools each policy's scope can apply to (indexes into `tools`), by source.
    applies: Vec<Vec<usize>>,
    /// Source index by policy id.
    by_id: HashMap<String, usize>,
    /// The distinct slices: the sources whose action and resource scope can match a tool.
    slices: Vec<Vec<usize>>,
    /// Each source as discovery asks it ([`discovery_form`]).
    discovery: Vec<Option<Policy>>,
    /// Each source's principal scope.
    principals: Vec<PrincipalConstraint>,
    /// Whether each source reads `context.now`.
    reads_now: Vec<bool>,
    /// Whether each source reads the context beyond `context.dryRun` (its arguments,
    /// cost or time).
    reads_context: Vec<bool>,
    /// What is kept per caller, by the keyed hash of its [`Who`] (callers whose hashes
    /// meet share the list): Cedar's cost grows with every policy it is given (most
    /// of a slice is for other roles) and with every entity whose ancestors it closes.
    callers: RwLock<HashMap<u64, Vec<Arc<CallerEntry>>, ByIndex>>,
    /// The key of those hashes, drawn at compile.
    hash_key: RandomState,
    /// The address of the compiled catalog's first tool: a tool of it is found by its
    /// address (checked by name), as [`Catalog::index_of`] does.
    tools_at: usize,
    authorizer: Authorizer,
}

impl Policies {
    /// Compiles a validated set for `catalog`: each tool's entities, argument shape and
    /// slices.
    pub fn compile(loaded: Loaded, catalog: &Catalog) -> Result<Self, String> {
        let types = Types::new()?;
        let discovery: Vec<Option<Policy>> = loaded.sources.iter().map(discovery_form).collect();
        let mut applies = vec![Vec::new(); loaded.sources.len()];
        let mut slice_ids: BTreeMap<Vec<usize>, usize> = BTreeMap::new();
        let mut slices: Vec<Vec<usize>> = Vec::new();
        let mut tools = Vec::with_capacity(catalog.tools.len());
        for (t, tool) in catalog.tools.iter().enumerate() {
            let version = catalog
                .services
                .get(&tool.service)
                .map(|s| s.catalog_version.as_str())
                .unwrap_or_default();
            let slice: Vec<usize> = (loaded.sources.iter().enumerate())
                .filter(|(_, s)| scope_may_match(&s.policy, tool))
                .map(|(i, _)| i)
                .collect();
            for &i in &slice {
                if let Some(list) = applies.get_mut(i) {
                    list.push(t);
                }
            }
            let slice = match slice_ids.get(&slice) {
                Some(&id) => id,
                None => {
                    slices.push(slice.clone());
                    slice_ids.insert(slice, slices.len() - 1);
                    slices.len() - 1
                }
            };
            let arguments = match Shape::from_cedar(
                &super::schema::cedar_type(&tool.arguments.value()).unwrap_or(Value::Null),
            ) {
                Some(Shape::Record(fields)) => fields,
                _ => Vec::new(),
            };
            tools.push(ToolPolicies {
                name: tool.full_name.clone(),
                action: types.action(&tool.full_name),
                resource: types.tool(&tool.full_name),
                action_entity: types.action_entity(tool),
                tool_entity: types.tool_entity(tool, version)?,
                arguments,
                slice,
            });
        }
        let by_id = (loaded.sources.iter().enumerate())
            .map(|(i, s)| (s.id.clone(), i))
            .collect();
        let principals = (loaded.sources.iter())
            .map(|s| s.policy.principal_constraint())
            .collect();
        let reads_now = (loaded.sources.iter())
            .map(|s| {
                s.policy
                    .to_json()
                    .is_ok_and(|est| est::any(&est, &|m| est::is_attr(m, "context", "now")))
            })
            .collect();
        let reads_context = (loaded.sources.iter())
            .map(|s| {
                s.policy
                    .to_json()
                    .map_or(true, |est| reads_more_than_dry_run(&est))
            })
            .collect();
        Ok(Self {
            loaded,
            types,
            tools,
            applies,
            by_id,
            slices,
            discovery,
            principals,
            reads_now,
            reads_context,
            callers: RwLock::new(HashMap::default()),
            hash_key: RandomState::new(),
            tools_at: catalog.tools.as_ptr() as usize,
            authorizer: Authorizer::new(),
        })
    }

    /// The policies, in file then source order.
    pub fn sources(&self) -> &[Source] {
        &self.loaded.sources
    }

    /// What strict validation warned of.
    pub fn warnings(&self) -> &[String] {
        &self.loaded.warnings
    }

    /// The full names of the tools a policy's scope can apply to.
    pub fn tools_of(&self, source: usize) -> impl Iterator<Item = &str> {
        self.applies
            .get(source)
            .into_iter()
            .flatten()
            .filter_map(|&t| self.tools.get(t))
            .map(|t| t.name.as_str())
    }

    /// A tool's policies: found by its address when it is of the compiled catalog
    /// (the name checked), by name otherwise.
    fn entry(&self, tool: &Tool) -> Option<(usize, &ToolPolicies)> {
        let by_address = crate::catalog::index_at(self.tools_at, tool)
            .and_then(|i| Some((i, self.tools.get(i)?)))
            .filter(|(_, t)| t.name == tool.full_name);
        if by_address.is_some() {
            return by_address;
        }
        let i = self
            .tools
            .binary_search_by(|t| t.name.as_str().cmp(&tool.full_name))
            .ok()?;
        Some((i, self.tools.get(i)?))
    }

    fn caller_hash(&self, caller: &Caller) -> u64 {
        let mut h = self.hash_key.build_hasher();
        hash_who(caller, &mut h);
        h.finish()
    }

    /// What is kept of `caller`, made at its first question.
    fn known(&self, caller: &Caller) -> Arc<CallerEntry> {
        let hash = self.caller_hash(caller);
        if let Ok(kept) = self.callers.read()
            && let Some(known) = (kept.get(&hash).into_iter().flatten()).find(|c| c.who.is(caller))
        {
            return Arc::clone(known);
        }
        let known = Arc::new(CallerEntry {
            who: Who::of(caller),
            uid: self.types.principal_uid(caller),
            entity: self.types.principal(caller).ok(),
            cuts: RwLock::new(HashMap::new()),
            tools: RwLock::new(HashMap::default()),
            visible: (0..self.tools.len()).map(|_| AtomicU8::new(0)).collect(),
        });
        if let Ok(mut kept) = self.callers.write() {
            if kept.len() >= KEPT_CALLERS {
                kept.clear();
            }
            let same = kept.entry(hash).or_default();
            same.retain(|c| !c.who.is(caller));
            same.push(Arc::clone(&known));
        }
        known
    }

    /// The decision kept for this caller, tool and flag, if there is one: two read
    /// locks, no copy.
    fn kept_decision(&self, index: usize, caller: &Caller, dry_run: bool) -> Option<Decision> {
        let hash = self.caller_hash(caller);
        let callers = self.callers.read().ok()?;
        let known = callers.get(&hash)?.iter().find(|c| c.who.is(caller))?;
        let tools = known.tools.read().ok()?;
        tools.get(&index)?.decided[usize::from(dry_run)].clone()
    }

    /// Decides a call of `tool` by `caller` with `arguments` (validated, defaults
    /// applied) and what else it brings ([`Facts`]: whether it is a dry run, its
    /// estimated cost, the guard rules that fired on its arguments); `now` is read
    /// only when a policy of the caller's cut reads `context.now`. A forbid that fails
    /// to evaluate refuses the call (Cedar would skip it).
    pub fn decide(
        &self,
        tool: &Tool,
        caller: &Caller,
        arguments: &Map<String, Value>,
        facts: Facts<'_>,
        now: impl FnOnce() -> jiff::Timestamp,
    ) -> Result<Decision, Unreadable> {
        let Facts {
            dry_run,
            cost,
            guards,
        } = facts;
        let Some((index, entry)) = self.entry(tool) else {
            return Ok(refused());
        };
        if let Some(decision) = self.kept_decision(index, caller, dry_run) {
            return Ok(decision);
        }
        let known = self.known(caller);
        let cut = self.cut_set(entry, &known, caller, false);
        let args = read_record(&entry.arguments, arguments).map_err(Unreadable)?;
        let mut pairs = vec![
            ("arguments".to_string(), args),
            (
                "dryRun".to_string(),
                RestrictedExpression::new_bool(dry_run),
            ),
            ("cost".to_string(), cost_record(cost)),
            (
                "guards".to_string(),
                RestrictedExpression::new_set(
                    guards
                        .iter()
                        .map(|id| RestrictedExpression::new_string(id.to_string())),
                ),
            ),
        ];
        if cut.reads_now {
            pairs.push((
                "now".to_string(),
                RestrictedExpression::new_datetime(
                    now().strftime("%Y-%m-%dT%H:%M:%S%.3fZ").to_string(),
                ),
            ));
        }
        let context = Context::from_pairs(pairs);
        let decision = self.ask(index, entry, &known, context, &cut.set);
        if cut.kept {
            known.keep(index, |kept| {
                kept.decided[usize::from(dry_run)] = Some(decision.clone());
            });
        }
        Ok(decision)
    }

    /// Whether some call of `tool` by `caller` could be permitted: lists and
    /// searches show it.
    /// The answer is kept per caller and tool: a list asks of every tool.
    pub fn may_see(&self, tool: &Tool, caller: &Caller) -> bool {
        let Some((index, entry)) = self.entry(tool) else {
            return false;
        };
        let known = self.known(caller);
        let Some(kept) = known.visible.get(index) else {
            return false;
        };
        match kept.load(Ordering::Relaxed) {
            1 => return false,
            2 => return true,
            _ => {}
        }
        let set = self.cut_set(entry, &known, caller, true);
        let shown = (self.ask(index, entry, &known, Ok(Context::empty()), &set.set)).allowed;
        kept.store(if shown { 2 } else { 1 }, Ordering::Relaxed);
        shown
    }

    /// [`Policies::may_see`] as a refusal: `forbidden` (`details.reason = "policy"`,
    /// no ids) for a tool no call of which could be permitted, as its reference is
    /// refused.
    pub fn check_visible(&self, tool: &Tool, caller: &Caller) -> Result<(), CallError> {
        if self.may_see(tool, caller) {
            return Ok(());
        }
        Err(CallError::new(
            Classification::Forbidden,
            format!(
                "no policy permits any call of `{}` by this caller",
                tool.full_name
            ),
        )
        .with_details(serde_json::json!({ "reason": "policy", "policies": [] })))
    }

    fn ask(
        &self,
        index: usize,
        entry: &ToolPolicies,
        known: &CallerEntry,
        context: Result<Context, cedar_policy::ContextCreationError>,
        set: &PolicySet,
    ) -> Decision {
        let Ok(context) = context else {
            return refused();
        };
        let Some(entities) = Self::entities(index, entry, known) else {
            return refused();
        };
        let request = Request::new(
            known.uid.clone(),
            entry.action.clone(),
            entry.resource.clone(),
            context,
            None,
        );
        let Ok(request) = request else {
            return refused();
        };
        let response = self.authorizer.is_authorized(&request, set, &entities);
        let diagnostics = response.diagnostics();
        // A forbid that could not be evaluated refuses: a rule meant to stop a call
        // never lets it through by failing.
        let failed_forbids: Vec<String> = diagnostics
            .errors()
            .filter_map(|e| {
                let cedar_policy::AuthorizationError::PolicyEvaluationError(e) = e;
                let id = e.policy_id();
                tracing::warn!(policy = %id, tool = %entry.name, "a policy failed to evaluate; it did not apply");
                let source = self.source(id)?;
                (source.effect == Effect::Forbid).then(|| source.id.clone())
            })
            .collect();
        if !failed_forbids.is_empty() {
            return Decision {
                allowed: false,
                policies: failed_forbids.into(),
                confirm: None,
            };
        }
        let mut policies: Vec<String> = diagnostics.reason().map(|id| id.to_string()).collect();
        policies.sort();
        let policies: Arc<[String]> = policies.into();
        match response.decision() {
            CedarDecision::Allow => Decision {
                allowed: true,
                confirm: diagnostics
                    .reason()
                    .filter_map(|id| self.source(id)?.confirm)
                    .max(),
                policies,
            },
            CedarDecision::Deny => Decision {
                allowed: false,
                policies,
                confirm: None,
            },
        }
    }

    /// The entities of a call of a tool by a caller, gathered at the first and kept.
    fn entities(index: usize, entry: &ToolPolicies, known: &CallerEntry) -> Option<Arc<Entities>> {
        if let Ok(kept) = known.tools.read()
            && let Some(entities) = kept.get(&index).and_then(|k| k.entities.as_ref())
        {
            return Some(Arc::clone(entities));
        }
        let who = known.entity.clone()?;
        let entities = Arc::new(
            Entities::from_entities(
                [who, entry.action_entity.clone(), entry.tool_entity.clone()],
                None,
            )
            .ok()?,
        );
        known.keep(index, |kept| kept.entities = Some(Arc::clone(&entities)));
        Some(entities)
    }

    /// The policies of a tool's slice whose principal scope can match the caller (in
    /// their discovery form for `discovery`), as one set; kept per caller and slice.
    fn cut_set(
        &self,
        entry: &ToolPolicies,
        known: &CallerEntry,
        caller: &Caller,
        discovery: bool,
    ) -> Arc<Cut> {
        let key = (entry.slice, discovery);
        if let Ok(kept) = known.cuts.read()
            && let Some(set) = kept.get(&key)
        {
            return Arc::clone(set);
        }
        let roles: Vec<EntityUid> = caller.roles.iter().map(|r| self.types.role(r)).collect();
        let chosen: Vec<usize> = (self.slices.get(entry.slice).into_iter().flatten())
            .filter(|&&i| {
                self.principals
                    .get(i)
                    .is_some_and(|c| principal_may_match(c, &known.uid, &roles))
            })
            .copied()
            .collect();
        let reads_now = chosen
            .iter()
            .any(|&i| self.reads_now.get(i).copied().unwrap_or(true));
        let kept = !chosen
            .iter()
            .any(|&i| self.reads_context.get(i).copied().unwrap_or(true));
        let chosen = chosen.into_iter().filter_map(|i| {
            if discovery {
                self.discovery.get(i).cloned().flatten()
            } else {
                self.loaded.sources.get(i).map(|s| s.policy.clone())
            }
        });
        // The slice's policies were one set at load: they are one set again.
        let set = Arc::new(Cut {
            set: PolicySet::from_policies(chosen).unwrap_or_default(),
            reads_now,
            kept,
        });
        if let Ok(mut kept) = known.cuts.write() {
            kept.insert(key, Arc::clone(&set));
        }
        set
    }

    fn source(&self, id: &PolicyId) -> Option<&Source> {
        self.loaded
            .sources
            .get(*self.by_id.get(AsRef::<str>::as_ref(id))?)
    }
}

/// Whether a policy (its JSON form) reads the context beyond `context.dryRun`: every
/// `context` it names is not the left side of a `.dryRun`.
fn reads_more_than_dry_run(est: &Value) -> bool {
    let (mut contexts, mut dry_runs) = (0_usize, 0_usize);
    est::visit(est, &mut |m| {
        if m.get("Var").and_then(Value::as_str) == Some("context") {
            contexts += 1;
        }
        if est::is_attr(m, "context", "dryRun") {
            dry_runs += 1;
        }
    });
    contexts > dry_runs
}

fn refused() -> Decision {
    Decision {
        allowed: false,
        policies: Arc::new([]),
        confirm: None,
    }
}

impl CallerEntry {
    /// Changes what is kept of one tool, starting again past [`KEPT_ENTITIES`] tools.
    fn keep(&self, index: usize, change: impl FnOnce(&mut Kept)) {
        if let Ok(mut kept) = self.tools.write() {
            if kept.len() >= KEPT_ENTITIES && !kept.contains_key(&index) {
                kept.clear();
            }
            change(kept.entry(index).or_default());
        }
    }
}

/// Whether a principal scope can match a caller with this uid in these roles (its only
/// ancestors).
fn principal_may_match(c: &PrincipalConstraint, uid: &EntityUid, roles: &[EntityUid]) -> bool {
    let within = |u: &EntityUid| u == uid || roles.contains(u);
    match c {
        PrincipalConstraint::Any => true,
        PrincipalConstraint::Eq(u) => u == uid,
        PrincipalConstraint::In(u) => within(u),
        PrincipalConstraint::Is(t) => uid.type_name() == t,
        PrincipalConstraint::IsIn(t, u) => uid.type_name() == t && within(u),
    }
}

/// Whether a policy's action and resource scope can match a call of `tool`.
fn scope_may_match(policy: &Policy, tool: &Tool) -> bool {
    let is_action = |uid: &EntityUid| {
        uid.type_name().to_string() == "Action"
            && (uid.id().unescaped() == tool.full_name
                || action_groups(tool).contains(&uid.id().unescaped()))
    };
    let action = match policy.action_constraint() {
        ActionConstraint::Any => true,
        ActionConstraint::Eq(uid) => is_action(&uid),
        ActionConstraint::In(uids) => uids.iter().any(is_action),
    };
    let is_resource = |uid: &EntityUid| match uid.type_name().to_string().as_str() {
        "Tool" => uid.id().unescaped() == tool.full_name,
        "Service" => uid.id().unescaped() == tool.service,
        _ => false,
    };
    let resource = match policy.resource_constraint() {
        ResourceConstraint::Any => true,
        ResourceConstraint::Eq(uid) => uid.type_name().to_string() == "Tool" && is_resource(&uid),
        ResourceConstraint::In(uid) => is_resource(&uid),
        ResourceConstraint::Is(t) => t.to_string() == "Tool",
        ResourceConstraint::IsIn(t, uid) => t.to_string() == "Tool" && is_resource(&uid),
    };
    action && resource
}

/// A policy as discovery asks it: a permit without the parts of its conditions that
/// read `context` (what the call's arguments decide), a forbid only when none of its
/// conditions reads `context`.
fn discovery_form(source: &Source) -> Option<Policy> {
    let mut est = source.policy.to_json().ok()?;
    let conditions = est.get("conditions")?.as_array()?.clone();
    let reads_context = |v: &Value| est::reads_var(v, "context");
    let kept: Vec<Value> = match source.effect {
        Effect::Forbid => {
            if conditions.iter().any(reads_context) {
                return None;
            }
            conditions
        }
        Effect::Permit => conditions
            .into_iter()
            .filter_map(|c| {
                if !reads_context(&c) {
                    return Some(c);
                }
                // `when` keeps its conjuncts that do not read context; an `unless`
                // that reads it is dropped (it might not hold).
                if c.get("kind")?.as_str()? != "when" {
                    return None;
                }
                let conjuncts: Vec<Value> = conjuncts(c.get("body")?)
                    .into_iter()
                    .filter(|e| !est::reads_var(e, "context"))
                    .collect();
                let body = conjuncts.into_iter().reduce(
                    |left, right| serde_json::json!({ "&&": { "left": left, "right": right } }),
                )?;
                Some(serde_json::json!({ "kind": "when", "body": body }))
            })
            .collect(),
    };
    if let Some(map) = est.as_object_mut() {
        map.insert("conditions".into(), Value::Array(kept));
    }
    Policy::from_json(Some(PolicyId::new(&source.id)), est).ok()
}

/// The operands of a chain of `&&`.
fn conjuncts(expr: &Value) -> Vec<Value> {
    match expr.get("&&") {
        Some(and) => {
            let mut out = and.get("left").map(conjuncts).unwrap_or_default();
            out.extend(and.get("right").map(conjuncts).unwrap_or_default());
            out
        }
        None => vec![expr.clone()],
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::catalog::compile::compile;
    use crate::catalog::source::Sources;
    use crate::config::PolicyConfig;
    use crate::policy::{load, schema};

    /// `text` as one policy file, validated and compiled for `catalog`, with `claims` as
    /// the user attributes policies may read.
    fn compiled(catalog: &Catalog, text: &str, claims: &[&str]) -> Policies {
        let config = PolicyConfig {
            dir: "unused".into(),
            claims: claims.iter().map(|c| c.to_string()).collect(),
            set_claims: Vec::new(),
            units: Vec::new(),
        };
        let schema = schema::schema(catalog, &config).unwrap();
        let loaded = load::load(&[("t.cedar".into(), text.into())], schema).unwrap();
        Policies::compile(loaded, catalog).unwrap()
    }

    /// What is kept per caller never answers for another: the same name with other
    /// roles, the same user with other claims, asked in turn, are each decided anew.
    #[test]
    fn what_is_kept_of_a_caller_never_decides_for_another() {
        let catalog = compile(&Sources::embedded()).unwrap();
        let text = r#"
            @id("support")
            permit(principal in Role::"support", action == Action::"payments.post_refunds", resource);
            @id("billing")
            permit(principal is User, action in Action::"payments", resource)
              when { principal has department && principal.department == "billing" };
        "#;
        let policies = compiled(&catalog, text, &["department"]);
        let refund = catalog.resolve("payments.post_refunds").unwrap();
        let Value::Object(args) = json!({ "charge": "ch_1", "amount": 10 }) else {
            unreachable!()
        };
        let now = jiff::Timestamp::UNIX_EPOCH;
        let key = |roles: &[&str]| Caller {
            roles: roles.iter().map(|r| r.to_string()).collect(),
            ..Caller::unrestricted("k")
        };
        let user = |department: &str| Caller {
            user: Some(User {
                issuer: "https://idp".into(),
                subject: "ada".into(),
            }),
            claims: vec![("department".into(), Claim::One(department.into()))],
            ..Caller::unrestricted("ada")
        };
        for _ in 0..2 {
            for (who, allowed) in [
                (key(&["support"]), true),
                (key(&[]), false),
                (key(&["support"]), true),
                (user("billing"), true),
                (user("sales"), false),
            ] {
                let decided = policies
                    .decide(refund, &who, &args, Facts::default(), || now)
                    .unwrap();
                assert_eq!(decided.allowed, allowed, "{:?} {:?}", who.roles, who.claims);
                assert_eq!(policies.may_see(refund, &who), allowed);
            }
        }
    }

    /// A decision is kept only where nothing but the caller, the tool and `dryRun` can
    /// change it: a rule reading the arguments is asked anew each call, a rule reading
    /// `dryRun` alone is kept per value of the flag.
    #[test]
    fn kept_decisions_answer_only_what_they_were_asked() {
        let catalog = compile(&Sources::embedded()).unwrap();
        let text = r#"
            @id("all") permit(principal, action, resource);
            @id("previews") forbid(principal in Role::"trainee", action, resource) when { !context.dryRun };
            @id("cap") forbid(principal in Role::"support", action == Action::"payments.post_refunds", resource)
              when { context.arguments has amount && context.arguments.amount > 5000 };
        "#;
        let policies = compiled(&catalog, text, &[]);
        assert_eq!(policies.reads_context, [false, false, true]);
        let refund = catalog.resolve("payments.post_refunds").unwrap();
        let args = |amount: i64| {
            let Value::Object(args) = json!({ "charge": "ch_1", "amount": amount }) else {
                unreachable!()
            };
            args
        };
        let now = jiff::Timestamp::UNIX_EPOCH;
        let who = |role: &str| Caller {
            roles: vec![role.into()],
            ..Caller::unrestricted("k")
        };
        for _ in 0..2 {
            for (role, amount, dry_run, allowed) in [
                ("support", 10, false, true),
                ("support", 9_000, false, false),
                ("support", 10, false, true),
                ("trainee", 9_000, true, true),
                ("trainee", 10, false, false),
                ("trainee", 9_000, true, true),
            ] {
                let decided = policies
                    .decide(
                        refund,
                        &who(role),
                        &args(amount),
                        Facts {
                            dry_run,
                            ..Facts::default()
                        },
                        || now,
                    )
                    .unwrap();
                assert_eq!(decided.allowed, allowed, "{role} {amount} {dry_run}");
            }
        }
        // The trainee's cut reads only `dryRun`: kept; the support caller's is not.
        let kept = |role: &str| {
            let known = policies.known(&who(role));
            let tools = known.tools.read().unwrap();
            tools
                .values()
                .flat_map(|k| k.decided.iter().flatten())
                .count()
        };
        assert_eq!((kept("trainee"), kept("support")), (2, 0));
    }

    /// A tool is found by its address in the catalog the set was compiled for and by
    /// its name in another; the clock is read only when a policy reads `context.now`.
    #[test]
    fn tools_are_found_by_address_or_name_and_the_clock_read_only_when_asked() {
        let catalog = compile(&Sources::embedded()).unwrap();
        let other = compile(&Sources::embedded()).unwrap();
        let text = r#"
            @id("refunds") permit(principal, action == Action::"payments.post_refunds", resource);
            @id("office-hours") forbid(principal, action == Action::"payments.get_balance", resource)
              when { context.now > datetime("2100-01-01T00:00:00Z") };
            @id("balance") permit(principal, action == Action::"payments.get_balance", resource);
        "#;
        let policies = compiled(&catalog, text, &[]);
        let who = Caller::unrestricted("k");
        let Value::Object(args) = json!({ "charge": "ch_1", "amount": 10 }) else {
            unreachable!()
        };
        let read = std::cell::Cell::new(0);
        let now = || {
            read.set(read.get() + 1);
            jiff::Timestamp::UNIX_EPOCH
        };
        for refund in [
            catalog.resolve("payments.post_refunds").unwrap(),
            other.resolve("payments.post_refunds").unwrap(),
        ] {
            let decided = policies
                .decide(refund, &who, &args, Facts::default(), now)
                .unwrap();
            assert!(decided.allowed);
            assert_eq!(&decided.policies[..], ["refunds"]);
        }
        assert_eq!(
            read.get(),
            0,
            "no policy of the refund's cut reads the time"
        );
        let balance = catalog.resolve("payments.get_balance").unwrap();
        let decided = policies
            .decide(balance, &who, &Map::new(), Facts::default(), now)
            .unwrap();
        assert!(decided.allowed);
        assert_eq!(read.get(), 1);
    }

    /// A caller is found by its parts, never by another's: the same name with other
    /// roles, roles that would read alike joined, a user named as a key.
    #[test]
    fn callers_are_told_apart_by_every_part() {
        let key = |roles: &[&str]| Caller {
            roles: roles.iter().map(|r| r.to_string()).collect(),
            ..Caller::unrestricted("k")
        };
        let user = Caller {
            user: Some(User {
                issuer: "k".into(),
                subject: "k".into(),
            }),
            ..Caller::unrestricted("k")
        };
        let callers = [
            key(&["a", "b"]),
            key(&["a\u{1f}b"]),
            key(&["ab"]),
            key(&[]),
            user,
        ];
        for (i, a) in callers.iter().enumerate() {
            for (j, b) in callers.iter().enumerate() {
                assert_eq!(Who::of(a).is(b), i == j, "{i} {j}");
            }
        }
    }
}
