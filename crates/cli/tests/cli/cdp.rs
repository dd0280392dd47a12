//! Headless Chromium driven over the DevTools protocol: a WebSocket client on 127.0.0.1 (the
//! handshake, masked text frames out, frames in) enough to navigate, evaluate script, click with the
//! mouse, press keys and take a screenshot, as a person would with the page.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// `chromium` (or `chromium-browser`) on PATH, else /usr/bin/chromium.
pub fn find_chromium() -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .flat_map(|dir| ["chromium", "chromium-browser"].map(|name| dir.join(name)))
        .chain([PathBuf::from("/usr/bin/chromium")])
        .find(|candidate| candidate.is_file())
}

/// A headless browser with one page, stopped (and its profile removed) when dropped.
pub struct Browser {
    child: Child,
    socket: TcpStream,
    next_id: u64,
    _profile: tempfile::TempDir,
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Browser {
    /// Starts `chromium` headless and offline (no background networking, updates or sync), with a
    /// fresh profile, and connects to its page.
    pub fn start(chromium: &Path) -> Browser {
        let profile = tempfile::tempdir().unwrap();
        let child = Command::new(chromium)
            .args([
                "--headless",
                "--no-sandbox", // CI runs as root, where Chromium's sandbox refuses to start
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--remote-debugging-port=0",
                "--window-size=1400,1000",
            ])
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .arg("about:blank")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromium starts");
        // The browser writes the port it listens on into its profile.
        let active = profile.path().join("DevToolsActivePort");
        let deadline = Instant::now() + Duration::from_secs(60);
        let port = loop {
            if let Some(port) =
                std::fs::read_to_string(&active).ok().and_then(|t| t.lines().next()?.parse::<u16>().ok())
            {
                break port;
            }
            assert!(Instant::now() < deadline, "chromium wrote no DevToolsActivePort within a minute");
            std::thread::sleep(Duration::from_millis(50));
        };
        let page_url = loop {
            let (_, list) = crate::view::http("GET", &format!("http://127.0.0.1:{port}/json/list"), "");
            let list: Value = serde_json::from_str(&list).unwrap_or(Value::Null);
            let page = list.as_array().and_then(|targets| {
                targets.iter().find(|t| t["type"] == "page").and_then(|t| t["webSocketDebuggerUrl"].as_str())
            });
            if let Some(url) = page {
                break url.to_string();
            }
            assert!(Instant::now() < deadline, "chromium has no page: {list}");
            std::thread::sleep(Duration::from_millis(50));
        };
        let socket = connect(&page_url);
        let mut browser = Browser { child, socket, next_id: 0, _profile: profile };
        browser.call("Page.enable", json!({}));
        browser.call("Runtime.enable", json!({}));
        browser
    }

    /// Calls `method` and returns its result; panics on a protocol error.
    pub fn call(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        send(&mut self.socket, &json!({ "id": id, "method": method, "params": params }).to_string());
        loop {
            let message: Value = serde_json::from_str(&receive(&mut self.socket)).expect("a JSON message");
            if message["id"] == id {
                assert!(message.get("error").is_none(), "{method}: {}", message["error"]);
                return message["result"].clone();
            }
        }
    }

    /// The value of the script `expression` (a promise is awaited).
    pub fn eval(&mut self, expression: &str) -> Value {
        let result = self
            .call("Runtime.evaluate", json!({ "expression": expression, "returnByValue": true, "awaitPromise": true }));
        assert!(result.get("exceptionDetails").is_none(), "{expression}: {}", result["exceptionDetails"]);
        result["result"]["value"].clone()
    }

    /// Waits until `expression` is true, for at most 30 seconds.
    pub fn wait_for(&mut self, expression: &str) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while self.eval(expression) != Value::Bool(true) {
            assert!(Instant::now() < deadline, "never true: {expression}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Opens `url` and waits for it to load.
    pub fn open(&mut self, url: &str) {
        self.call("Page.navigate", json!({ "url": url }));
        self.wait_for(&format!("location.href === {} && document.readyState === 'complete'", json!(url)));
    }

    /// Clicks the middle of the first element `selector` matches with the mouse, scrolled into view.
    pub fn click(&mut self, selector: &str) {
        let at = self.eval(&format!(
            "(() => {{ const e = document.querySelector({}); e.scrollIntoView({{block: 'center'}}); \
             const r = e.getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; }})()",
            json!(selector)
        ));
        let (x, y) = (at[0].as_f64().unwrap(), at[1].as_f64().unwrap());
        for kind in ["mousePressed", "mouseReleased"] {
            self.call(
                "Input.dispatchMouseEvent",
                json!({ "type": kind, "x": x, "y": y, "button": "left", "clickCount": 1 }),
            );
        }
    }

    /// Presses and releases the key `key` (a printable character).
    pub fn press(&mut self, key: &str) {
        self.call("Input.dispatchKeyEvent", json!({ "type": "keyDown", "key": key, "text": key }));
        self.call("Input.dispatchKeyEvent", json!({ "type": "keyUp", "key": key }));
    }

    /// A PNG of the page as shown.
    pub fn screenshot(&mut self) -> Vec<u8> {
        let result = self.call("Page.captureScreenshot", json!({ "format": "png" }));
        decode_base64(result["data"].as_str().expect("screenshot data"))
    }
}

/// Opens the WebSocket at `ws://HOST:PORT/PATH`.
fn connect(url: &str) -> TcpStream {
    let rest = url.strip_prefix("ws://").expect("a ws:// URL");
    let (host, path) = rest.split_once('/').expect("a path");
    let mut socket = TcpStream::connect(host).expect("the DevTools socket");
    socket.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    write!(
        socket,
        "GET /{path} HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
    )
    .unwrap();
    let mut reader = BufReader::new(socket.try_clone().unwrap());
    let mut status = String::new();
    reader.read_line(&mut status).unwrap();
    assert!(status.contains(" 101 "), "the WebSocket handshake: {status}");
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        if line == "\r\n" || line.is_empty() {
            break;
        }
    }
    assert!(reader.buffer().is_empty(), "no frame before the first call");
    socket
}

/// Sends `text` as one masked text frame (a client's frames are masked).
fn send(socket: &mut TcpStream, text: &str) {
    let payload = text.as_bytes();
    let mut frame = vec![0x81u8];
    match payload.len() {
        n if n < 126 => frame.push(0x80 | n as u8),
        n if n <= 0xffff => {
            frame.push(0x80 | 126);
            frame.extend_from_slice(&(n as u16).to_be_bytes());
        }
        n => {
            frame.push(0x80 | 127);
            frame.extend_from_slice(&(n as u64).to_be_bytes());
        }
    }
    let mask = [0x37u8, 0xfa, 0x21, 0x3d];
    frame.extend_from_slice(&mask);
    frame.extend(payload.iter().enumerate().map(|(i, b)| b ^ mask[i % 4]));
    socket.write_all(&frame).unwrap();
}

/// The next text message, its fragments joined; pings answered, other frames skipped.
fn receive(socket: &mut TcpStream) -> String {
    let mut message = Vec::new();
    loop {
        let mut head = [0u8; 2];
        socket.read_exact(&mut head).expect("a frame from chromium");
        let (fin, opcode) = (head[0] & 0x80 != 0, head[0] & 0x0f);
        let length = match head[1] & 0x7f {
            126 => {
                let mut n = [0u8; 2];
                socket.read_exact(&mut n).unwrap();
                u64::from(u16::from_be_bytes(n))
            }
            127 => {
                let mut n = [0u8; 8];
                socket.read_exact(&mut n).unwrap();
                u64::from_be_bytes(n)
            }
            n => u64::from(n),
        };
        let mut payload = vec![0u8; length as usize];
        socket.read_exact(&mut payload).unwrap();
        match opcode {
            0x9 => {
                let mut pong = vec![0x8a, 0x80 | payload.len() as u8, 0, 0, 0, 0];
                pong.extend_from_slice(&payload);
                socket.write_all(&pong).unwrap();
            }
            0x8 => panic!("chromium closed the DevTools socket"),
            0x0..=0x2 => {
                message.extend_from_slice(&payload);
                if fin {
                    return String::from_utf8(message).expect("a UTF-8 message");
                }
            }
            _ => {}
        }
    }
}

/// Standard base64 (the screenshot's encoding), padding and line breaks ignored.
fn decode_base64(text: &str) -> Vec<u8> {
    let value = |c: u8| match c {
        b'A'..=b'Z' => Some(c - b'A'),
        b'a'..=b'z' => Some(c - b'a' + 26),
        b'0'..=b'9' => Some(c - b'0' + 52),
        b'+' => Some(62),
        b'/' => Some(63),
        _ => None,
    };
    let digits: Vec<u8> = text.bytes().filter_map(value).collect();
    let mut out = Vec::with_capacity(digits.len() * 3 / 4);
    for chunk in digits.chunks(4) {
        let n = chunk.iter().enumerate().fold(0u32, |n, (i, d)| n | u32::from(*d) << (18 - 6 * i));
        out.extend_from_slice(&n.to_be_bytes()[1..chunk.len()]);
    }
    out
}

#[test]
fn base64_decodes_what_the_screenshot_sends() {
    assert_eq!(decode_base64("iVBORw0KGgo="), b"\x89PNG\r\n\x1a\n");
    assert_eq!(decode_base64("YWJj"), b"abc");
    assert_eq!(decode_base64("YWI="), b"ab");
}
