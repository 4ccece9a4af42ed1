/* Tally tracker: pageviews, SPA navigations, custom events; no cookies. <script defer data-domain="example.com" src="https://tally.example/static/tracker.js"></script> Options: data-api, data-allow-localhost. Events: tally("Signup", {props: {plan: "pro"}, revenue: {currency: "EUR", amount: 19}, interactive: true, callback: fn}); plausible(...) works too. */
(function(w,d){"use strict";var s=d.currentScript;if(!s)return;var dom=s.getAttribute("data-domain")||location.hostname,api=s.getAttribute("data-api")||new URL("/api/event",s.src).href,last;
function send(n,o){o=o||{};var l=w.location,cb=o.callback;if(l.protocol==="file:"||/^(localhost|127\.|\[::1\])/.test(l.hostname)&&!s.hasAttribute("data-allow-localhost")){w.console&&console.warn("Tally: not counting "+l.hostname+" (local); add data-allow-localhost to count it");cb&&cb();return}
var e={n:n,u:l.href,d:dom,r:d.referrer||null,w:w.innerWidth};if(o.props)e.p=o.props;if(o.revenue)e.$=o.revenue;if(o.interactive===false)e.i=false;var b=JSON.stringify(e);
try{if(!cb&&w.navigator.sendBeacon&&w.navigator.sendBeacon(api,new Blob([b],{type:"text/plain"})))return}catch(x){}
w.fetch?w.fetch(api,{method:"POST",body:b,headers:{"Content-Type":"text/plain"},keepalive:true,credentials:"omit"}).then(function(){cb&&cb()},function(){cb&&cb()}):cb&&cb()}
function page(){if(last===location.pathname)return;last=location.pathname;send("pageview")}
var q=(w.tally&&w.tally.q||[]).concat(w.plausible&&w.plausible.q||[]);w.tally=function(n,o){send(n,o)};if(!w.plausible||w.plausible.q)w.plausible=w.tally;
var h=w.history;if(h.pushState){var p=h.pushState;h.pushState=function(){p.apply(this,arguments);page()};w.addEventListener("popstate",page)}page();
for(var i=0;i<q.length;i++)send(q[i][0],q[i][1])})(window,document);
