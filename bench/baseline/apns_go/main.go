// apnsgo: the raw Go APNs client baseline for bench/push_fanout.sh (issue 29's "raw Go client").
//
// It sends pushes the way Go's apns2 (the client gorush is built on) does, with nothing around them:
// net/http's HTTP/2 client over TLS (apns2 uses golang.org/x/net/http2's Transport, which net/http
// bundles), one provider token reused on every request (apns2 caches it for 50 minutes), a POST to
// /3/device/<token> per push with apns2's headers, the response body read to the end and its
// apns-id header taken. Every push goes to its own device token, as a topic send's do. No ledger,
// no retries, no queue: the ceiling of a Go client on this machine, in the same run as ours.
//
// Usage: apnsgo -url https://127.0.0.1:PORT -jwt TOKEN -topic TOPIC -n PUSHES -c WORKERS
// Prints one line: "PUSHES_PER_SECOND CPU_US_PER_PUSH ACCEPTED" (its own user + system CPU).
package main

import (
	"crypto/tls"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

const payload = `{"aps":{"alert":{"title":"Hello","body":"A benchmark push to everyone"}},"bk":{"id":"00000000-0000-0000-0000-000000000000","data":{"k":1}}}`

func cpuSeconds() float64 {
	var usage syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &usage); err != nil {
		return 0
	}
	seconds := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	return seconds(usage.Utime) + seconds(usage.Stime)
}

func main() {
	base := flag.String("url", "", "simulator base URL")
	jwt := flag.String("jwt", "", "provider token (ES256 JWT)")
	topic := flag.String("topic", "com.example.bench", "apns-topic")
	total := flag.Int("n", 200000, "pushes to send")
	workers := flag.Int("c", 400, "concurrent requests")
	flag.Parse()
	if *base == "" || *jwt == "" {
		fmt.Fprintln(os.Stderr, "usage: apnsgo -url URL -jwt TOKEN [-topic T] [-n N] [-c C]")
		os.Exit(64)
	}
	client := &http.Client{
		Transport: &http.Transport{
			TLSClientConfig:   &tls.Config{InsecureSkipVerify: true}, // the simulator's test certificate
			ForceAttemptHTTP2: true,
			IdleConnTimeout:   90 * time.Second,
		},
		Timeout: 60 * time.Second,
	}
	authorization := "bearer " + *jwt
	var next, accepted, failed int64
	var firstError atomic.Value
	var wait sync.WaitGroup
	cpuBefore := cpuSeconds()
	start := time.Now()
	for w := 0; w < *workers; w++ {
		wait.Add(1)
		go func() {
			defer wait.Done()
			for {
				i := atomic.AddInt64(&next, 1)
				if i > int64(*total) {
					return
				}
				url := fmt.Sprintf("%s/3/device/%064x", *base, i)
				request, err := http.NewRequest(http.MethodPost, url, strings.NewReader(payload))
				if err != nil {
					panic(err)
				}
				request.Header.Set("Content-Type", "application/json; charset=utf-8")
				request.Header.Set("apns-topic", *topic)
				request.Header.Set("apns-push-type", "alert")
				request.Header.Set("authorization", authorization)
				response, err := client.Do(request)
				if err != nil {
					atomic.AddInt64(&failed, 1)
					firstError.CompareAndSwap(nil, err.Error())
					continue
				}
				_, _ = io.Copy(io.Discard, response.Body)
				response.Body.Close()
				_ = response.Header.Get("apns-id")
				if response.StatusCode == http.StatusOK {
					atomic.AddInt64(&accepted, 1)
				} else {
					atomic.AddInt64(&failed, 1)
					firstError.CompareAndSwap(nil, response.Status)
				}
			}
		}()
	}
	wait.Wait()
	elapsed := time.Since(start).Seconds()
	cpu := cpuSeconds() - cpuBefore
	if failed > 0 {
		fmt.Fprintf(os.Stderr, "apnsgo: %d of %d pushes failed (first: %v)\n", failed, *total, firstError.Load())
	}
	fmt.Printf("%.0f %.2f %d\n", float64(*total)/elapsed, cpu/float64(*total)*1e6, accepted)
}
