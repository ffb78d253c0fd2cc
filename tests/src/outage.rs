//! A store outage on demand: a proxy in front of the AWS emulator that answers DynamoDB's
//! writes (or one operation of DynamoDB or SQS) with `500 InternalServerError` (as DynamoDB does in a partial outage, and as the SDK
//! retries) while it is told to, or holds one call until its caller hangs up, and passes
//! everything else through. The server under test is pointed at it with `AWS_ENDPOINT_URL`.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;

/// The DynamoDB operations that write (their `x-amz-target`, lowercase).
const WRITES: [&str; 5] = [
    "dynamodb_20120810.putitem",
    "dynamodb_20120810.updateitem",
    "dynamodb_20120810.deleteitem",
    "dynamodb_20120810.transactwriteitems",
    "dynamodb_20120810.batchwriteitem",
];

/// The proxy: [`StoreOutage::base`] is its address; [`StoreOutage::fail_writes`] starts and
/// ends the outage.
pub struct StoreOutage {
    base: String,
    faults: Arc<Faults>,
}

/// What the proxy fails now.
#[derive(Default)]
struct Faults {
    /// Every write.
    all_writes: AtomicBool,
    /// The next `n` calls of one operation (its `x-amz-target`, lowercase) whose request holds a
    /// text (lowercase): the calls of one write, not whichever of the server's writes come next.
    next: Mutex<Option<NextCalls>>,
    /// One call whose answer is lost (it reaches the emulator, its caller gets a 500), and
    /// the calls to fail once it was: [`StoreOutage::lose_then_fail`].
    lose: Mutex<Option<(NextCalls, NextCalls)>>,
    /// One call held, never passed on, until its caller gives it up:
    /// [`StoreOutage::hold_next`].
    hold: Mutex<Option<NextCalls>>,
    /// One call held until its caller gives it up, then passed on `after` that (it lands
    /// late, unseen), and the calls to fail once it arrived: [`StoreOutage::late_then_fail`].
    late: Mutex<Option<(NextCalls, std::time::Duration, NextCalls)>>,
    /// Told when the held call arrived.
    held: Notify,
    /// Told when the late call was passed on and its answer read (it landed).
    landed: Notify,
    /// How many calls it failed.
    failed: AtomicU64,
}

/// Calls to fail: `left` more of `operation` whose request holds `holding`.
struct NextCalls {
    operation: String,
    holding: String,
    left: u64,
}

impl NextCalls {
    /// The next `left` calls of `operation` whose request holds `holding` (both lowercased).
    fn of(operation: &str, holding: &str, left: u64) -> Self {
        NextCalls {
            operation: operation.to_ascii_lowercase(),
            holding: holding.to_ascii_lowercase(),
            left,
        }
    }
}

/// What becomes of one request.
enum Fate {
    Pass,
    /// Answered 500 without reaching the emulator.
    Fail,
    /// Passed to the emulator, then answered 500 (its answer lost).
    Lose,
    /// Held until its caller closes the connection, never passed on.
    Hold,
    /// Held until its caller closes the connection, then passed on this much later.
    Late(std::time::Duration),
}

impl Faults {
    /// What becomes of the request `head` (lowercase, head and body); a failed or lost one is
    /// counted.
    fn fate(&self, head: &str) -> Fate {
        let target = |op: &str| head.contains(&format!("x-amz-target: {op}\r\n"));
        let mut hold = self.hold.lock().unwrap_or_else(|e| e.into_inner());
        if hold
            .as_ref()
            .is_some_and(|h| target(&h.operation) && head.contains(&h.holding))
        {
            *hold = None;
            self.held.notify_one();
            return Fate::Hold;
        }
        drop(hold);
        let mut late = self.late.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((call, _, _)) = late.as_ref() {
            if target(&call.operation) && head.contains(&call.holding) {
                let (_, after, then) = late.take().expect("checked");
                if then.left > 0 {
                    *self.next.lock().unwrap_or_else(|e| e.into_inner()) = Some(then);
                }
                self.failed.fetch_add(1, Ordering::SeqCst);
                return Fate::Late(after);
            }
        }
        drop(late);
        let mut lose = self.lose.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((lost, _)) = lose.as_ref() {
            if target(&lost.operation) && head.contains(&lost.holding) {
                let (_, then) = lose.take().expect("checked");
                *self.next.lock().unwrap_or_else(|e| e.into_inner()) = Some(then);
                self.failed.fetch_add(1, Ordering::SeqCst);
                return Fate::Lose;
            }
        }
        drop(lose);
        if self.fails(head) {
            Fate::Fail
        } else {
            Fate::Pass
        }
    }

    /// Whether the request `head` (lowercase, head and body) fails (and counts it if so).
    fn fails(&self, head: &str) -> bool {
        let target = |op: &str| head.contains(&format!("x-amz-target: {op}\r\n"));
        let mut fail = self.all_writes.load(Ordering::SeqCst) && WRITES.iter().any(|op| target(op));
        let mut next = self.next.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(calls) = next.as_mut() {
            if target(&calls.operation) && head.contains(&calls.holding) {
                fail = true;
                calls.left -= 1;
                if calls.left == 0 {
                    *next = None;
                }
            }
        }
        if fail {
            self.failed.fetch_add(1, Ordering::SeqCst);
        }
        fail
    }
}

impl StoreOutage {
    /// Starts the proxy in front of `emulator` (`http://127.0.0.1:PORT`), passing everything.
    pub async fn start(emulator: &str) -> StoreOutage {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let base = format!("http://{}", listener.local_addr().expect("address"));
        let upstream = emulator
            .trim_start_matches("http://")
            .trim_end_matches('/')
            .to_owned();
        let faults = Arc::new(Faults::default());
        let shared = faults.clone();
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                tokio::spawn(relay(client, upstream.clone(), shared.clone()));
            }
        });
        StoreOutage { base, faults }
    }

    /// The address to give the server as `AWS_ENDPOINT_URL`.
    pub fn base(&self) -> &str {
        &self.base
    }

    /// Whether DynamoDB's writes fail from now on.
    pub fn fail_writes(&self, failing: bool) {
        self.faults.all_writes.store(failing, Ordering::SeqCst);
    }

    /// Fails the next `n` calls of `operation` (its `x-amz-target`:
    /// `DynamoDB_20120810.PutItem`, `AmazonSQS.SendMessage`, …) whose request holds
    /// `holding` (compared lowercase: something only the write meant has, since the server's
    /// own sweeps write too and under load one of theirs could come first), then passes them.
    pub fn fail_next(&self, operation: &str, holding: &str, n: u64) {
        *self.faults.next.lock().unwrap_or_else(|e| e.into_inner()) = (n > 0).then(|| NextCalls {
            operation: operation.to_ascii_lowercase(),
            holding: holding.to_ascii_lowercase(),
            left: n,
        });
    }

    /// Loses the answer of the next call of `operation` whose request holds `holding` (the
    /// call reaches the emulator and takes effect; its caller gets a 500, which the SDK
    /// retries), then fails the next `n` calls of `then` holding `then_holding`.
    pub fn lose_then_fail(
        &self,
        (operation, holding): (&str, &str),
        (then, then_holding): (&str, &str),
        n: u64,
    ) {
        *self.faults.lose.lock().unwrap_or_else(|e| e.into_inner()) = Some((
            NextCalls::of(operation, holding, 1),
            NextCalls::of(then, then_holding, n),
        ));
    }

    /// Holds the next call of `operation` whose request holds `holding` until its caller
    /// gives it up (the SDK does when its attempt times out), and passes it on `after` that:
    /// a call that lands after its caller stopped waiting for it. Then fails the next `n`
    /// calls of `then` holding `then_holding`.
    pub fn late_then_fail(
        &self,
        (operation, holding): (&str, &str),
        after: std::time::Duration,
        (then, then_holding): (&str, &str),
        n: u64,
    ) {
        *self.faults.late.lock().unwrap_or_else(|e| e.into_inner()) = Some((
            NextCalls::of(operation, holding, 1),
            after,
            NextCalls::of(then, then_holding, n),
        ));
    }

    /// Holds the next call of `operation` whose request holds `holding` (compared lowercase)
    /// until its caller closes the connection (the SDK does when its attempt times out, or
    /// when the call's future is dropped), and never passes it on: a call lost on the way.
    pub fn hold_next(&self, operation: &str, holding: &str) {
        *self.faults.hold.lock().unwrap_or_else(|e| e.into_inner()) = Some(NextCalls {
            operation: operation.to_ascii_lowercase(),
            holding: holding.to_ascii_lowercase(),
            left: 1,
        });
    }

    /// Returns once the call of [`StoreOutage::late_then_fail`] landed (it was passed on and
    /// the emulator answered it).
    pub async fn landed(&self) {
        self.faults.landed.notified().await;
    }

    /// Returns once the call of [`StoreOutage::hold_next`] arrived.
    pub async fn held(&self) {
        self.faults.held.notified().await;
    }

    /// How many calls it has failed (or lost the answer of) so far.
    pub fn failed(&self) -> u64 {
        self.faults.failed.load(Ordering::SeqCst)
    }
}

/// One request of `client`: failed, or passed to `upstream` and its answer back. One request
/// per connection (the emulator closes each after its answer, and so does this).
async fn relay(mut client: TcpStream, upstream: String, faults: Arc<Faults>) {
    let Some(request) = read_request(&mut client).await else {
        return;
    };
    let head = String::from_utf8_lossy(&request).to_ascii_lowercase();
    let fate = faults.fate(&head);
    if let Fate::Hold | Fate::Late(_) = fate {
        // Until the caller hangs up: a read that ends (EOF) or breaks.
        let mut buf = [0u8; 1024];
        while matches!(client.read(&mut buf).await, Ok(n) if n > 0) {}
        if let Fate::Late(after) = fate {
            tokio::time::sleep(after).await;
            if let Ok(mut server) = TcpStream::connect(&upstream).await {
                let mut answer = Vec::new();
                if server.write_all(&request).await.is_ok() {
                    let _ = server.read_to_end(&mut answer).await;
                }
            }
            faults.landed.notify_one();
        }
        return;
    }
    if !matches!(fate, Fate::Fail) {
        let Ok(mut server) = TcpStream::connect(&upstream).await else {
            return;
        };
        let mut answer = Vec::new();
        if server.write_all(&request).await.is_err()
            || server.read_to_end(&mut answer).await.is_err()
        {
            return;
        }
        if matches!(fate, Fate::Pass) {
            let _ = client.write_all(&answer).await;
            return;
        }
    }
    let body = r#"{"__type":"com.amazonaws.dynamodb.v20120810#InternalServerError","message":"Internal server error (injected by the test)"}"#;
    let answer = format!(
        "HTTP/1.1 500 Internal Server Error\r\ncontent-type: application/x-amz-json-1.0\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = client.write_all(answer.as_bytes()).await;
}

/// One HTTP request: its head and its `content-length` body.
async fn read_request(client: &mut TcpStream) -> Option<Vec<u8>> {
    let mut request = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        let n = client.read(&mut buf).await.ok()?;
        if n == 0 {
            return None;
        }
        request.extend_from_slice(&buf[..n]);
        if let Some(end) = request.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&request[..end]).to_ascii_lowercase();
            let length: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(0);
            if request.len() >= end + 4 + length {
                return Some(request);
            }
        }
    }
}
