#include "cli/bench_serve/load_generator.h"

#include <cmath>
#include <deque>
#include <future>
#include <memory>
#include <random>

#include "base/check.h"

namespace herd::bench {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// The state of one run; lives on the client's I/O thread only.
class Run : public std::enable_shared_from_this<Run> {
 public:
  Run(HttpClient& client, const LoadOptions& o, const std::vector<Session>& sessions)
      : client_(client), o_(o), sessions_(sessions), history_(sessions.size()) {
    total_ = CountRequests(sessions);
  }

  std::future<RunResult> Start() {
    auto f = done_.get_future();
    client_.Post([self = shared_from_this()] { self->Begin(); });
    return f;
  }

 private:
  void Begin() {
    t0_ = Clock::now();
    if (total_ == 0) return End();
    const bool open_loop = o_.request_rate > 0 && std::isfinite(o_.request_rate);
    if (!open_loop) {
      for (size_t i = 0; i < sessions_.size(); ++i) ready_.push_back({i, 0});
      arrived_ = sessions_.size();
    } else {
      std::mt19937_64 rng(o_.seed);
      std::exponential_distribution<double> gap(o_.request_rate);
      double t = 0;
      for (size_t i = 0; i < sessions_.size(); ++i) {
        arrivals_.push_back(t);
        t += gap(rng);
      }
      NextArrival();
    }
    Launch();
    Tick();
  }

  // Schedules the next session's arrival (open loop).
  void NextArrival() {
    while (arrived_ < sessions_.size() && arrivals_[arrived_] <= Seconds(Clock::now() - t0_)) {
      ready_.push_back({arrived_++, 0});
    }
    if (arrived_ == sessions_.size()) return;
    const auto at =
        t0_ + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(arrivals_[arrived_]));
    client_.PostAfter(at - Clock::now(), [self = shared_from_this()] {
      self->NextArrival();
      self->Launch();
    });
  }

  void Tick() {
    if (finished_ || !o_.progress) return;
    o_.progress(State());
    client_.PostAfter(o_.progress_interval, [self = shared_from_this()] { self->Tick(); });
  }

  ProgressState State() const {
    ProgressState p;
    p.total = total_;
    p.done = static_cast<int>(records_.size());
    p.failed = failed_;
    p.in_flight = in_flight_;
    p.output_tokens = output_tokens_;
    p.elapsed_s = Seconds(Clock::now() - t0_);
    return p;
  }

  void Launch() {
    while (in_flight_ < o_.concurrency && !ready_.empty()) {
      const auto [session, turn] = ready_.front();
      ready_.pop_front();
      Send(session, turn);
    }
  }

  struct Pending {
    RequestRecord rec;
    StreamDecoder decoder;
    Clock::time_point sent, last_delta;
    std::string error_body;
    explicit Pending(Api api) : decoder(api) {}
  };

  void Send(size_t session, int turn) {
    const Session& s = sessions_[session];
    std::vector<Message>& hist = history_[session];
    if (turn == 0) hist = s.base;
    hist.push_back({"user", s.user_turns[turn]});
    auto p = std::make_shared<Pending>(o_.request.api);
    RequestRecord& r = p->rec;
    r.session = static_cast<int>(session);
    r.turn = turn;
    r.requested_output = s.max_tokens[turn];
    r.fitted_prompt_tokens = s.base_tokens;
    for (int t = 0; t <= turn; ++t) r.fitted_prompt_tokens += s.turn_tokens.empty() ? 0 : s.turn_tokens[t];
    ClientRequest q;
    q.host = o_.url.host;
    q.port = o_.url.port;
    q.target = o_.url.base_path + RequestPath(o_.request.api);
    q.headers = RequestHeaders(o_.request);
    q.body = RequestBody(o_.request, hist, r.requested_output);
    q.timeout = o_.timeout;
    p->sent = Clock::now();
    r.start_s = Seconds(p->sent - t0_);
    ++in_flight_;
    ClientHandlers h;
    h.on_response = [p](int status, const Headers&) { p->rec.http_status = status; };
    h.on_data = [self = shared_from_this(), p](std::string_view data) {
      if (p->rec.http_status != 200) {
        if (p->error_body.size() < 4096) p->error_body.append(data.substr(0, 4096 - p->error_body.size()));
        return true;
      }
      const Clock::time_point now = Clock::now();
      p->decoder.Feed(data, [&] { self->Delta(*p, now); });
      return p->decoder.outcome().parse_error.empty();
    };
    h.on_done = [self = shared_from_this(), p](const ClientResult& result) { self->Done(*p, result); };
    client_.Send(std::move(q), std::move(h));
  }

  void Delta(Pending& p, Clock::time_point now) {
    RequestRecord& r = p.rec;
    if (r.ttft_s < 0) {
      r.ttft_s = Seconds(now - p.sent);
    } else {
      r.itl_s.push_back(Seconds(now - p.last_delta));
    }
    p.last_delta = now;
  }

  void Done(Pending& p, const ClientResult& result) {
    const Clock::time_point now = Clock::now();
    RequestRecord& r = p.rec;
    r.e2e_s = Seconds(now - p.sent);
    if (r.http_status == 200 && result.error == ClientError::kNone) {
      p.decoder.Finish([&] { Delta(p, now); });
    }
    const StreamOutcome& out = p.decoder.outcome();
    r.deltas = out.deltas;
    r.usage_prompt_tokens = out.usage_prompt_tokens;
    r.usage_output_tokens = out.usage_output_tokens;
    r.tokens_from_usage = out.usage_output_tokens >= 0;
    r.output_tokens = r.tokens_from_usage ? out.usage_output_tokens : out.deltas;
    r.finish_reason = out.finish_reason;
    if (result.error == ClientError::kAborted || !out.parse_error.empty()) {
      r.error_kind = "parse";
      r.error = out.parse_error.empty() ? result.message : out.parse_error;
    } else if (result.error == ClientError::kProtocol) {
      r.error_kind = "parse";
      r.error = result.message;
    } else if (result.error != ClientError::kNone) {
      r.error_kind = ClientErrorName(result.error);
      r.error = result.message;
    } else if (r.http_status != 200) {
      r.error_kind = "http_" + std::to_string(r.http_status);
      r.error = ErrorMessageOf(p.error_body);
    } else if (!out.error.empty()) {
      r.error_kind = "server_error";
      r.error = out.error;
    } else if (!out.complete) {
      r.error_kind = "incomplete";
      r.error = "the stream ended without its end marker";
    }
    r.ok = r.error_kind.empty();
    const bool ok = r.ok;
    if (ok) output_tokens_ += r.output_tokens;
    --in_flight_;
    const size_t session = static_cast<size_t>(r.session);
    const Session& s = sessions_[session];
    const int turns = static_cast<int>(s.user_turns.size());
    const int next = r.turn + 1;
    Record(std::move(r));
    if (ok && next < turns) {
      history_[session].push_back({"assistant", out.text});
      ready_.push_front({session, next});
    } else if (!ok) {
      for (int t = next; t < turns; ++t) {
        RequestRecord skipped;
        skipped.session = static_cast<int>(session);
        skipped.turn = t;
        skipped.requested_output = s.max_tokens[t];
        skipped.error_kind = "skipped";
        skipped.error = "an earlier turn of the session failed";
        Record(std::move(skipped));
      }
    }
    if (!ok || next >= turns) history_[session].clear();  // the session is over
    if (static_cast<int>(records_.size()) == total_) return End();
    Launch();
  }

  void Record(RequestRecord r) {
    if (!r.ok) ++failed_;
    records_.push_back(std::move(r));
  }

  void End() {
    HERD_CHECK(!finished_);
    finished_ = true;
    RunResult out;
    out.duration_s = Seconds(Clock::now() - t0_);
    out.records = std::move(records_);
    if (o_.progress) {
      ProgressState st;
      st.total = total_;
      st.done = total_;
      st.failed = failed_;
      st.output_tokens = output_tokens_;
      st.elapsed_s = out.duration_s;
      o_.progress(st);
    }
    done_.set_value(std::move(out));
  }

  HttpClient& client_;
  const LoadOptions& o_;
  const std::vector<Session>& sessions_;
  std::vector<std::vector<Message>> history_;  // per session: the conversation so far
  std::deque<std::pair<size_t, int>> ready_;   // (session, turn) ready to send
  std::vector<double> arrivals_;               // open loop: session arrival times (s)
  size_t arrived_ = 0;
  Clock::time_point t0_;
  int total_ = 0, in_flight_ = 0, failed_ = 0;
  int64_t output_tokens_ = 0;
  bool finished_ = false;
  std::vector<RequestRecord> records_;
  std::promise<RunResult> done_;
};

}  // namespace

RunResult RunLoad(HttpClient& client, const LoadOptions& o, const std::vector<Session>& sessions) {
  HERD_CHECK_MSG(!client.OnIoThread(), "RunLoad called on the HTTP client's I/O thread");
  HERD_CHECK(o.concurrency >= 1);
  auto run = std::make_shared<Run>(client, o, sessions);
  return run->Start().get();
}

}  // namespace herd::bench
