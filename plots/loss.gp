# loss.gp — training loss per recipe: the mean over seeds with its 95%
# confidence band, raw mean faint, validation as markers. Data and
# variables: fig_loss.c.
if (!exists("plotsdir")) plotsdir = system("dirname ".ARG0)
load plotsdir."/style.gp"

set xlabel "optimizer step"
set ylabel "training loss (nats/token)"
set xrange [xlo:xhi]
if (exists("ylo")) { set yrange [ylo:yhi] }
# the key above the plot, where no curve can run under it
set key outside top center horizontal maxcols 2 width -1 font ",8"
if (logx) {
    set logscale x
    set xlabel "optimizer step (log scale)"
}
if (logy) {
    # a loss spans less than a decade: label 1..9 x 10^k, not just 10^k
    set logscale y
    set ytics format "%g"
    set ytics ()
    do for [e=int(floor(log10(ylo))):int(ceil(log10(yhi)))] {
        do for [m in "1 1.5 2 3 4 5 6 8"] { set ytics add (m*10**e) }
    }
}
set offsets 0, 0, graph 0.04, graph 0.02

plot for [i=1:n] datafile index 2*(i-1) using 1:2 with lines lw 0.6 lc rgb faint(word(colors, i)) notitle, \
     for [i=1:n] datafile index 2*(i-1) using 1:4:5 with filledcurves fs transparent solid 0.25 noborder lc rgb word(colors, i) notitle, \
     for [i=1:n] datafile index 2*(i-1) using 1:3 with lines lw 1.2 lc rgb word(colors, i) title word(titles, i) noenhanced, \
     for [i=1:n] datafile index 2*i-1 using 1:2 with points pt 7 ps 0.45 lc rgb word(colors, i) notitle, \
     keyentry with points pt 7 ps 0.45 lc rgb "#555555" title (anyval ? "validation" : ""), \
     keyentry with filledcurves fs transparent solid 0.25 noborder lc rgb "#555555" title (anyband ? "95% CI over seeds" : "")
