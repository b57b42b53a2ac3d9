//! Who confirms a write, and how (decisions 005 and 008): the flag decision
//! (`flag`: run, preview or refuse), bound confirmation tokens (`bound`) and the key
//! ring that seals them (`seal`), a person's approval (`approval/`: the page and MCP
//! elicitation), and `Idempotency-Key` replays (`idempotency`).
//!
//! The functions here take the pipeline's parts ([`crate::run::Parts`]) and this
//! stage's own settings ([`Confirmations`]), never the driver.
//!
//! May import: the catalog, config, callers, the store, upstream, answers, telemetry,
//! [`crate::run`] and [`crate::error`]; never the call driver or an endpoint.

pub mod approval;
pub mod audit;
pub mod bound;
pub mod flag;
pub mod idempotency;
pub mod seal;
pub mod session;

/// The broker argument naming an approval (mode `human`). Accepted by every write, never
/// sent upstream; bound confirmations leave it out of what they bind.
pub const APPROVAL_ARG: &str = "approvalId";

/// What a confirmation token, an approval or an MCP request state is bound to: the
/// digest of the call's arguments and, for a tool that runs others, of the plan of
/// writes its preview showed (decision 017).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bind<'a> {
    /// sha256 of the bound arguments ([`bound::digest`]).
    pub args: &'a str,
    /// `None`: the plan is not checked yet (a tool that runs others, before its plan is
    /// read again); `Some(None)`: a call without a plan; `Some(Some(digest))`: this plan.
    pub plan: Option<Option<&'a str>>,
}

impl<'a> Bind<'a> {
    /// A call that sends only its own request: its arguments, no plan.
    pub fn args(args: &'a str) -> Self {
        Self {
            args,
            plan: Some(None),
        }
    }

    /// A call whose plan is `plan` (`None`: no write).
    pub fn with_plan(args: &'a str, plan: Option<&'a str>) -> Self {
        Self {
            args,
            plan: Some(plan),
        }
    }

    /// Everything but the plan, checked before the plan is read.
    pub fn before_plan(args: &'a str) -> Self {
        Self { args, plan: None }
    }

    /// The plan digest sealed or stored with a confirmation.
    pub fn plan(&self) -> Option<&'a str> {
        self.plan.flatten()
    }
}

/// This stage's own settings: how confirmation tokens are sealed and how long they last,
/// who may approve writes and what seals what they are shown (mode `human`).
pub struct Confirmations {
    /// Seals confirmation tokens (keys in the store).
    pub(crate) sealer: seal::Sealer,
    /// Who may approve writes (mode `human`).
    pub(crate) approvers: approval::Approvers,
    /// Seals what approvers are shown.
    pub(crate) approval_cipher: Option<approval::PreviewCipher>,
    /// How long an approval lasts.
    pub(crate) approval_ttl_seconds: u64,
    /// How long a repeat waits on a pending approval.
    pub(crate) approval_wait_seconds: u64,
    /// The public base URL for approval links.
    pub(crate) public_url: Option<String>,
    /// How cookies are written (from `public_url`, never from a request).
    pub(crate) site: session::Site,
    /// How long approver sessions live and may idle.
    pub(crate) session_times: session::Times,
    /// How long a confirmation token stays valid.
    pub(crate) confirmation_ttl_seconds: u64,
    /// Whether a person can approve here (approvers and an approval key configured).
    pub(crate) people_approve: bool,
}

/// How long the pages' sessions live (eight hours) and may idle (`session_idle_minutes`).
pub fn session_times(config: &crate::config::ConfigFile) -> Result<session::Times, String> {
    let minutes = config
        .session_idle_minutes
        .unwrap_or(session::DEFAULT_IDLE_MINUTES);
    if minutes == 0 || minutes > 8 * 60 {
        return Err(format!(
            "config session_idle_minutes is {minutes}: from 1 to 480 (default {})",
            session::DEFAULT_IDLE_MINUTES
        ));
    }
    Ok(session::Times {
        lifetime_ms: 8 * 3_600_000,
        idle_ms: i64::try_from(minutes).unwrap_or(480) * 60_000,
    })
}

impl Confirmations {
    /// Reads the confirmation settings of the config; `env` gives the approval keys.
    /// Mode `human` anywhere needs approvers and an approval key.
    pub fn new(
        config: &crate::config::ConfigFile,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Self, String> {
        let human = config.confirmation == Some(crate::config::WriteConfirmation::Human)
            || config
                .keys
                .iter()
                .any(|k| k.confirmation == Some(crate::config::WriteConfirmation::Human));
        let approvers = approval::Approvers::from_config(&config.approvers)?;
        let mut previous = Vec::new();
        for old in &config.approval_previous_key_envs {
            let Some(key) = env(old).filter(|v| !v.is_empty()) else {
                return Err(format!(
                    "config approval_previous_key_envs: the variable `{old}` is not set; set it or remove it from the list"
                ));
            };
            previous.push(key);
        }
        let approval_cipher = match &config.approval_key_env {
            Some(variable) => match env(variable).filter(|v| !v.is_empty()) {
                Some(secret) => Some(
                    approval::PreviewCipher::with_previous(&secret, &previous)
                        .map_err(|e| format!("config approval_key_env `{variable}`: {e}"))?,
                ),
                None => None,
            },
            None => None,
        };
        let approval_wait_seconds = config
            .approval_wait_seconds
            .unwrap_or(approval::DEFAULT_WAIT_SECONDS);
        if approval_wait_seconds > approval::MAX_WAIT_SECONDS {
            return Err(format!(
                "config approval_wait_seconds = {approval_wait_seconds}: at most {} (a call waits that long for a person; clients time out)",
                approval::MAX_WAIT_SECONDS
            ));
        }
        let provider_approvers = config
            .oauth
            .as_ref()
            .and_then(|o| o.sign_in.as_ref())
            .is_some_and(|s| s.approver_role.is_some());
        if human && ((approvers.is_empty() && !provider_approvers) || approval_cipher.is_none()) {
            return Err("confirmation = \"human\" needs approvers ([[approvers]], or [oauth.sign_in] approver_role) and approval_key_env (a variable holding a key of at least 32 characters that seals what approvers are shown)".into());
        }
        if let Some(url) = &config.public_url
            && !(url.starts_with("https://") || url.starts_with("http://"))
        {
            return Err("config public_url must be an absolute http(s) URL".into());
        }
        let people_approve =
            (!approvers.is_empty() || provider_approvers) && approval_cipher.is_some();
        Ok(Self {
            people_approve,
            sealer: seal::Sealer::default(),
            approvers,
            approval_cipher,
            approval_ttl_seconds: config
                .approval_ttl_seconds
                .unwrap_or(approval::DEFAULT_TTL_SECONDS),
            approval_wait_seconds,
            public_url: config.public_url.clone(),
            site: session::Site::of(config.public_url.as_deref()),
            session_times: session_times(config)?,
            confirmation_ttl_seconds: config
                .confirmation_ttl_seconds
                .unwrap_or(bound::DEFAULT_TTL_SECONDS),
        })
    }
}

impl Confirmations {
    /// The strongest mode this deployment can confirm in: `human` where people approve
    /// (approvers and an approval key), else `bound` (which needs nothing configured).
    pub fn strongest(&self) -> crate::config::WriteConfirmation {
        if self.people_approve {
            crate::config::WriteConfirmation::Human
        } else {
            crate::config::WriteConfirmation::Bound
        }
    }
}

/// What confirmation code reads: the pipeline's parts (through `Deref`) and this
/// stage's own settings.
#[derive(Clone, Copy)]
pub struct Context<'a> {
    /// The parts every stage may read.
    pub parts: &'a crate::run::Parts,
    /// This stage's settings.
    pub confirmations: &'a Confirmations,
}

impl std::ops::Deref for Context<'_> {
    type Target = crate::run::Parts;

    fn deref(&self) -> &crate::run::Parts {
        self.parts
    }
}
