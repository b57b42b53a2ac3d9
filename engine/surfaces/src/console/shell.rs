//! The console's frame: the navigation bar, who is signed in and a sign-out form, and
//! its one script (carried by the answer's CSP nonce): times written relative and in
//! the viewer's zone (the exact UTC on hover), and tables sorted by a header's button.
//! Every page reads and works without the script.

use base64::Engine as _;

use super::{Role, Viewer};
use crate::call::Broker;
use crate::html::{Page, document, escape};
use crate::reply::Reply;

/// The console's pages, in the bar's order: path and name.
pub const PAGES: [(&str, &str); 7] = [
    ("/admin", "Overview"),
    ("/admin/tools", "Catalog"),
    ("/admin/users", "Users and keys"),
    ("/admin/approvals", "Approvals"),
    ("/admin/tasks", "Jobs and tasks"),
    ("/admin/audit", "Audit"),
    ("/admin/config", "Configuration"),
];

/// The script. Plain ES5, no network, no storage.
const SCRIPT: &str = r"(function(){
var rtf=window.Intl&&Intl.RelativeTimeFormat?new Intl.RelativeTimeFormat(undefined,{numeric:'auto'}):null;
var units=[['year',31536e6],['month',2592e6],['day',864e5],['hour',36e5],['minute',6e4],['second',1e3]];
Array.prototype.forEach.call(document.querySelectorAll('time[datetime]'),function(t){
var d=new Date(t.getAttribute('datetime'));if(isNaN(d.getTime()))return;
var diff=d.getTime()-Date.now(),rel='';
if(rtf){for(var i=0;i<units.length;i++){if(Math.abs(diff)>=units[i][1]||i===units.length-1){rel=rtf.format(Math.round(diff/units[i][1]),units[i][0]);break;}}}
t.textContent=(rel?rel+' \u00b7 ':'')+d.toLocaleString();
t.title=t.getAttribute('datetime')+' (UTC)';});
Array.prototype.forEach.call(document.querySelectorAll('table.sortable'),function(table){
if(!table.tHead||!table.tBodies.length)return;var heads=table.tHead.rows[0].cells;
Array.prototype.forEach.call(heads,function(th,col){
if(th.hasAttribute('data-nosort')||!th.textContent)return;
var b=document.createElement('button');b.type='button';b.textContent=th.textContent;th.textContent='';th.appendChild(b);
b.addEventListener('click',function(){
var asc=th.getAttribute('aria-sort')!=='ascending';
Array.prototype.forEach.call(heads,function(h){h.removeAttribute('aria-sort');});
th.setAttribute('aria-sort',asc?'ascending':'descending');
var body=table.tBodies[0],rows=Array.prototype.slice.call(body.rows);
rows.sort(function(a,z){var x=a.cells[col],y=z.cells[col];x=x.getAttribute('data-sort')||x.textContent;y=y.getAttribute('data-sort')||y.textContent;
var nx=Number(x),ny=Number(y),c=(x!==''&&y!==''&&!isNaN(nx)&&!isNaN(ny))?nx-ny:x.localeCompare(y);return asc?c:-c;});
rows.forEach(function(r){body.appendChild(r);});});});});
})();";

fn nonce() -> Option<String> {
    let mut raw = [0u8; 18];
    getrandom::fill(&mut raw).ok()?;
    Some(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(raw))
}

/// A console page: `current` is its path in the bar (`""` for none).
pub fn page(
    broker: &Broker,
    viewer: &Viewer,
    current: &str,
    status: u16,
    title: &str,
    body: &str,
) -> Page {
    let mut nav = String::from("<nav aria-label=\"Console\">");
    for (path, name) in PAGES {
        let here = if path == current {
            " aria-current=\"page\""
        } else {
            ""
        };
        nav.push_str(&format!("<a href=\"{path}\"{here}>{name}</a>"));
    }
    nav.push_str("</nav>");
    let sign_out = viewer
        .form_token(broker, "logout")
        .map(|csrf| {
            format!(
                "<form class=\"inline\" method=\"post\" action=\"/hub/logout\"><input type=\"hidden\" name=\"csrf\" value=\"{}\"><button class=\"secondary\" type=\"submit\">Sign out</button></form>",
                escape(&csrf)
            )
        })
        .unwrap_or_default();
    nav.push_str(&format!(
        "<div class=\"who\"><span>{} <span class=\"tag\">{}</span></span>{sign_out}</div>",
        escape(&viewer.name),
        match viewer.role {
            Role::Admin => "admin",
            Role::Auditor => "auditor, read only",
        }
    ));
    let nonce = nonce();
    let body = document(
        title,
        &nav,
        body,
        true,
        nonce.as_deref().map(|n| (n, SCRIPT)),
    );
    let headers = nonce
        .map(|n| vec![("content-security-policy", crate::html::csp_with_nonce(&n))])
        .unwrap_or_default();
    Page {
        status,
        headers,
        body,
    }
}

/// The page of a refusal: sign in (401, with a link back here), not allowed (403), no
/// console (404).
pub fn refused(refusal: &super::access::Refusal, path_and_query: &str) -> Page {
    if refusal.status == 401 {
        let next =
            url::form_urlencoded::byte_serialize(path_and_query.as_bytes()).collect::<String>();
        let mut page = crate::html::page(
            401,
            "Sign in to the console",
            &format!(
                "<p>The console shows every call, user, approval and policy of this broker to the people its configuration names.</p><p><a class=\"button\" href=\"/hub/login?next={}\">Sign in</a></p>",
                escape(&next)
            ),
        );
        page.status = 401;
        return page;
    }
    crate::html::message(
        refusal.status,
        if refusal.status == 403 {
            "Not allowed"
        } else {
            "No console"
        },
        &format!("{}.", refusal.message),
    )
}

/// A list's filter links (`label` names them for a screen reader): each word links to
/// `href(word)`, the one `current` marked as the page shown.
pub fn filter_links(
    label: &str,
    words: &[&str],
    current: &str,
    href: impl Fn(&str) -> String,
) -> String {
    let mut nav = format!("<nav class=\"filters\" aria-label=\"{}\">", escape(label));
    for word in words {
        let here = if *word == current {
            " aria-current=\"page\""
        } else {
            ""
        };
        nav.push_str(&format!(
            "<a class=\"button secondary\" href=\"{}\"{here}>{}</a>",
            escape(&href(word)),
            escape(word)
        ));
    }
    nav.push_str("</nav>");
    nav
}

/// The page of a list that could not be read: the JSON answer's status and message
/// (`after`: HTML to follow the message, e.g. a link back).
pub fn failed(
    broker: &Broker,
    viewer: &Viewer,
    current: &str,
    title: &str,
    answer: &Reply,
    after: &str,
) -> Page {
    let message = answer
        .json_body()
        .and_then(|body| body["error"]["message"].as_str().map(String::from))
        .unwrap_or_default();
    let status = answer.status;
    page(
        broker,
        viewer,
        current,
        status,
        title,
        &format!("<p class=\"empty\">{}{after}</p>", escape(&message)),
    )
}
