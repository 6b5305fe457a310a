// A loopback HTTP/1.1 server that answers every request at once with the same canned
// /v1/completions body, with keep-alive. It exists so that client benchmarks measure the client:
// one epoll thread per --threads (SO_REUSEPORT), no allocation per request beyond buffers.
//
//   allot_llm_canned_server [--port N] [--threads T]     prints "PORT <n>" once listening
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

namespace {

const std::string kBody =
    R"({"id":"cmpl-bench","object":"text_completion","created":0,"model":"bench",)"
    R"("choices":[{"index":0,"text":" The answer is 4.","logprobs":null,"finish_reason":"stop",)"
    R"("stop_reason":null,"token_ids":[576,4226,374,220,19,13]}],)"
    R"("usage":{"prompt_tokens":24,"total_tokens":30,"completion_tokens":6}})";
const std::string kResponse =
    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " +
    std::to_string(kBody.size()) + "\r\n\r\n" + kBody;

struct Conn {
  std::string in;
  std::string out;
  size_t out_off = 0;
  bool want_out = false;
};

size_t ContentLength(const std::string& in, size_t header_end) {
  // Case-insensitive search for "content-length:" inside the header block.
  static const char kName[] = "content-length:";
  const size_t n = sizeof(kName) - 1;
  for (size_t i = 0; i + n <= header_end; ++i) {
    size_t k = 0;
    while (k < n && std::tolower(static_cast<unsigned char>(in[i + k])) == kName[k]) ++k;
    if (k == n) return std::strtoul(in.c_str() + i + n, nullptr, 10);
  }
  return 0;
}

int Listen(int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || listen(fd, 8192) != 0) {
    std::perror("bind/listen");
    std::exit(1);
  }
  return fd;
}

void Serve(int lfd) {
  int ep = epoll_create1(0);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = lfd;
  epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev);
  std::unordered_map<int, Conn> conns;
  std::vector<epoll_event> events(1024);
  char buf[65536];
  for (;;) {
    int n = epoll_wait(ep, events.data(), static_cast<int>(events.size()), -1);
    for (int i = 0; i < n; ++i) {
      const int fd = events[i].data.fd;
      if (fd == lfd) {
        for (;;) {
          int c = accept4(lfd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
          if (c < 0) break;
          int one = 1;
          setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
          epoll_event cev{};
          cev.events = EPOLLIN;
          cev.data.fd = c;
          epoll_ctl(ep, EPOLL_CTL_ADD, c, &cev);
          conns[c];
        }
        continue;
      }
      Conn& conn = conns[fd];
      bool closed = false;
      if (events[i].events & (EPOLLIN | EPOLLERR | EPOLLHUP)) {
        for (;;) {
          ssize_t r = read(fd, buf, sizeof(buf));
          if (r > 0) {
            conn.in.append(buf, static_cast<size_t>(r));
            continue;
          }
          if (r == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) closed = true;
          break;
        }
        for (;;) {
          size_t he = conn.in.find("\r\n\r\n");
          if (he == std::string::npos) break;
          size_t total = he + 4 + ContentLength(conn.in, he);
          if (conn.in.size() < total) break;
          conn.in.erase(0, total);
          conn.out += kResponse;
        }
      }
      if (!closed && conn.out_off < conn.out.size()) {
        ssize_t w = write(fd, conn.out.data() + conn.out_off, conn.out.size() - conn.out_off);
        if (w > 0) conn.out_off += static_cast<size_t>(w);
        if (w < 0 && errno != EAGAIN) closed = true;
        if (conn.out_off == conn.out.size()) {
          conn.out.clear();
          conn.out_off = 0;
        }
        const bool want = conn.out_off < conn.out.size() || !conn.out.empty();
        if (want != conn.want_out) {
          epoll_event mev{};
          mev.events = want ? (EPOLLIN | EPOLLOUT) : static_cast<uint32_t>(EPOLLIN);
          mev.data.fd = fd;
          epoll_ctl(ep, EPOLL_CTL_MOD, fd, &mev);
          conn.want_out = want;
        }
      }
      if (closed) {
        epoll_ctl(ep, EPOLL_CTL_DEL, fd, nullptr);
        close(fd);
        conns.erase(fd);
      }
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  int port = 0;
  int threads = 1;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--port") == 0) port = std::atoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--threads") == 0) threads = std::max(1, std::atoi(argv[i + 1]));
  }
  int first = Listen(port);
  sockaddr_in addr{};
  socklen_t len = sizeof(addr);
  getsockname(first, reinterpret_cast<sockaddr*>(&addr), &len);
  port = ntohs(addr.sin_port);
  std::vector<std::thread> ts;
  for (int t = 1; t < threads; ++t) ts.emplace_back(Serve, Listen(port));
  std::printf("PORT %d\n", port);
  std::fflush(stdout);
  Serve(first);
}
